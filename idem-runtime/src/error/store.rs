//! [`StoreError`]: how a store operation failed, in the few kinds the guard acts
//! on, with the driver's own error kept as the `source()` so an operator (or a
//! program) can still see the SQLSTATE, the Redis error kind or the I/O error.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

/// A driver error behind a store or idem error.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// What a [`StoreError`] says: a sentence for logs and `Error` messages, and the
/// driver error behind it, if any.
///
/// It reads as a `str` (`reason.contains(…)`, `&*reason`), so code that matched
/// on the text keeps working; [`source`](Reason::source) reaches the driver error.
/// Clones share the driver error (driver errors are not `Clone`).
#[derive(Clone)]
pub struct Reason {
    text: String,
    // Boxed inside the `Arc` so that an unshared one unwraps back into a plain
    // `BoxError` (`into_parts`), which the caller can downcast to the driver type.
    source: Option<Arc<BoxError>>,
}

impl Reason {
    /// A reason without a driver error behind it.
    pub fn new(text: impl Into<String>) -> Self {
        Reason {
            text: text.into(),
            source: None,
        }
    }

    /// Keeps `e` as the cause.
    pub fn with_source(mut self, e: impl StdError + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(Box::new(e)));
        self
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The driver error, if one was kept.
    pub fn source(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        self.source.as_deref().map(|b| &**b)
    }

    /// The text and the driver error, for wrapping into another error type. The
    /// driver error comes back as itself unless a clone of this reason still
    /// shares it; then it comes back wrapped (same message, same `source()`).
    pub fn into_parts(self) -> (String, Option<BoxError>) {
        let source = self.source.map(|a| match Arc::try_unwrap(a) {
            Ok(own) => own,
            Err(shared) => Box::new(Shared(shared)) as BoxError,
        });
        (self.text, source)
    }
}

/// A driver error still shared with a clone of its [`Reason`].
struct Shared(Arc<BoxError>);

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self.0, f)
    }
}

impl fmt::Display for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self.0, f)
    }
}

impl StdError for Shared {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.0.source()
    }
}

impl std::ops::Deref for Reason {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            // The text already says what the driver said (the usual case): a
            // `main` returning this error prints one readable line, not a struct.
            None => fmt::Debug::fmt(&self.text, f),
            Some(s) if self.text.contains(&s.to_string()) => fmt::Debug::fmt(&self.text, f),
            Some(s) => f
                .debug_struct("Reason")
                .field("text", &self.text)
                .field("source", s)
                .finish(),
        }
    }
}

impl From<String> for Reason {
    fn from(text: String) -> Self {
        Reason::new(text)
    }
}

impl From<&str> for Reason {
    fn from(text: &str) -> Self {
        Reason::new(text)
    }
}

/// A store failure. The guard turns it into `Error::StoreUnavailable`,
/// `Error::Codec` or `Error::InvalidKey` with the key attached.
///
/// Build one with the constructors (`StoreError::unavailable(msg)`) and keep the
/// driver error with [`with_source`](StoreError::with_source): it is this error's
/// `source()`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum StoreError {
    /// No answer, connection refused, timeout, server error: the caller cannot know
    /// whether the command applied. Safe to retry with the same owner. Counted by
    /// the circuit breaker.
    Unavailable(Reason),
    /// The key holds something that is not an idem record of this format.
    Codec(Reason),
    /// The store is misconfigured (missing table, bad URL).
    Config(Reason),
    /// The request cannot be stored as given (a key longer than the store's key
    /// column, a byte its text type cannot hold): the caller's input, which no
    /// retry fixes. Nothing was sent; never counted by the circuit breaker.
    Input(Reason),
    /// The store answers, but this operation got no turn to be sent within the
    /// caller's budget (a burst filled the store's [`SendQueue`](crate::store::SendQueue)).
    /// Nothing was sent. Not an outage: never counted by the circuit breaker.
    Overloaded(Reason),
}

/// Why a write that applied is not trusted: fewer replicas acknowledged it
/// than the store's durability asks for (a Redis store with
/// `Durability::Replicated`). The cause (`source()`) of the
/// [`StoreError::Unavailable`] such a claim answers: the claim is on the
/// primary and held by its owner, but a failover may lose it, so the guard
/// treats the call as an outage and releases the claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unreplicated {
    /// Replicas that acknowledged the write in time.
    pub acknowledged: u32,
    /// Replicas the store's durability asks for.
    pub wanted: u32,
}

impl fmt::Display for Unreplicated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "acknowledged by {} of {} replica(s)",
            self.acknowledged, self.wanted
        )
    }
}

impl StdError for Unreplicated {}

impl StoreError {
    /// Whether this is a claim that applied but is not trusted (see
    /// [`Unreplicated`]): its owner holds the key, so undoing it is a plain
    /// release.
    pub fn is_unreplicated(&self) -> bool {
        match self {
            StoreError::Unavailable(r) => r.source().is_some_and(|s| s.is::<Unreplicated>()),
            _ => false,
        }
    }

    /// [`StoreError::Unavailable`] with this text.
    pub fn unavailable(text: impl Into<String>) -> Self {
        StoreError::Unavailable(Reason::new(text))
    }

    /// [`StoreError::Codec`] with this text.
    pub fn codec(text: impl Into<String>) -> Self {
        StoreError::Codec(Reason::new(text))
    }

    /// [`StoreError::Config`] with this text.
    pub fn config(text: impl Into<String>) -> Self {
        StoreError::Config(Reason::new(text))
    }

    /// [`StoreError::Input`] with this text.
    pub fn input(text: impl Into<String>) -> Self {
        StoreError::Input(Reason::new(text))
    }

    /// [`StoreError::Overloaded`] with this text.
    pub fn overloaded(text: impl Into<String>) -> Self {
        StoreError::Overloaded(Reason::new(text))
    }

    /// Keeps `e` (the driver's error) as this error's `source()`.
    pub fn with_source(self, e: impl StdError + Send + Sync + 'static) -> Self {
        match self {
            StoreError::Unavailable(r) => StoreError::Unavailable(r.with_source(e)),
            StoreError::Codec(r) => StoreError::Codec(r.with_source(e)),
            StoreError::Config(r) => StoreError::Config(r.with_source(e)),
            StoreError::Input(r) => StoreError::Input(r.with_source(e)),
            StoreError::Overloaded(r) => StoreError::Overloaded(r.with_source(e)),
        }
    }

    /// The same error, its text rewritten by `f` (the kind and the driver
    /// error are kept): start-up steps add the store and its URL.
    #[cfg(any(feature = "redis", feature = "sql"))]
    pub(crate) fn map_text(self, f: impl FnOnce(&str) -> String) -> Self {
        let re = |r: Reason| Reason {
            text: f(&r.text),
            source: r.source,
        };
        match self {
            StoreError::Unavailable(r) => StoreError::Unavailable(re(r)),
            StoreError::Codec(r) => StoreError::Codec(re(r)),
            StoreError::Config(r) => StoreError::Config(re(r)),
            StoreError::Input(r) => StoreError::Input(re(r)),
            StoreError::Overloaded(r) => StoreError::Overloaded(re(r)),
        }
    }

    /// What went wrong, whatever the kind.
    pub fn reason(&self) -> &Reason {
        match self {
            StoreError::Unavailable(r)
            | StoreError::Codec(r)
            | StoreError::Config(r)
            | StoreError::Input(r)
            | StoreError::Overloaded(r) => r,
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Unavailable(r) => write!(f, "unavailable: {r}"),
            StoreError::Codec(r) => write!(f, "unreadable record: {r}"),
            StoreError::Config(r) => write!(f, "configuration: {r}"),
            StoreError::Input(r) => write!(f, "invalid input: {r}"),
            StoreError::Overloaded(r) => write!(f, "overloaded: {r}"),
        }
    }
}

impl StdError for StoreError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.reason()
            .source()
            .map(|e| e as &(dyn StdError + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("driver says no")]
    struct Driver;

    #[test]
    fn the_driver_error_is_the_source() {
        let e = StoreError::unavailable("connection reset").with_source(Driver);
        assert!(matches!(&e, StoreError::Unavailable(r) if r.contains("reset")));
        assert_eq!(e.to_string(), "unavailable: connection reset");
        let src = StdError::source(&e).expect("a source");
        assert!(src.downcast_ref::<Driver>().is_some(), "{src:?}");
        assert!(StdError::source(&StoreError::codec("x")).is_none());
        // A clone shares it; the last owner gets it back as itself.
        let copy = e.clone();
        assert!(
            StdError::source(&copy)
                .unwrap()
                .downcast_ref::<Driver>()
                .is_some()
        );
        let (_, shared) = copy.reason().clone().into_parts();
        assert_eq!(shared.unwrap().to_string(), "driver says no");
        drop(copy);
        let StoreError::Unavailable(r) = e else {
            unreachable!()
        };
        let (text, own) = r.into_parts();
        assert_eq!(text, "connection reset");
        assert!(own.unwrap().downcast_ref::<Driver>().is_some());
    }
}
