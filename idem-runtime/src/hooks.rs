//! The typed parts of a guarded call: how to find a backstop violation in the
//! caller's error type, how to load the existing result, and which errors are
//! terminal (stored and replayed like a success).
//!
//! They are plain function pointers and one closure, so the macro expansion and
//! the non-macro builder hand the same values to the same engine.

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;

use serde::{Serialize, de::DeserializeOwned};

/// Gives the `&dyn Error` view of a business error in which to search for a
/// unique violation.
pub type DetectFn<E> = for<'e> fn(&'e E) -> Option<&'e (dyn StdError + 'static)>;

/// How to store and replay a terminal business error.
pub struct Terminal<E> {
    /// Is this error terminal (a final answer, replayed to retries)?
    pub is_terminal: fn(&E) -> bool,
    pub(crate) encode: fn(&E) -> serde_json::Result<Vec<u8>>,
    pub(crate) decode: fn(&[u8]) -> serde_json::Result<E>,
}

impl<E> Clone for Terminal<E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for Terminal<E> {}

impl<E> fmt::Debug for Terminal<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Terminal").finish_non_exhaustive()
    }
}

impl<E: Serialize + DeserializeOwned> Terminal<E> {
    /// Errors for which `is_terminal` returns true are stored and replayed.
    pub fn new(is_terminal: fn(&E) -> bool) -> Self {
        Terminal {
            is_terminal,
            encode: |e| serde_json::to_vec(e),
            decode: |b| serde_json::from_slice(b),
        }
    }
}

/// Loads the existing result after a backstop violation.
pub trait OnConflict<T, E>: Send {
    /// The lookup's future.
    type Future: Future<Output = Result<T, E>> + Send;
    /// Starts the lookup, or `None` when no lookup was given.
    fn start(self) -> Option<Self::Future>;
}

/// No `on_conflict` lookup: a backstop violation becomes `Error::Duplicate`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoConflict;

impl<T, E> OnConflict<T, E> for NoConflict {
    type Future = std::future::Pending<Result<T, E>>;
    fn start(self) -> Option<Self::Future> {
        None
    }
}

impl<T, E, F, Fut> OnConflict<T, E> for F
where
    F: FnOnce() -> Fut + Send,
    Fut: Future<Output = Result<T, E>> + Send,
{
    type Future = Fut;
    fn start(self) -> Option<Fut> {
        Some(self())
    }
}

/// The typed hooks of one call.
pub struct Hooks<E, C = NoConflict> {
    pub(crate) detect: Option<DetectFn<E>>,
    pub(crate) terminal: Option<Terminal<E>>,
    pub(crate) on_conflict: C,
}

impl<E, C> fmt::Debug for Hooks<E, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks")
            .field("detect", &self.detect.is_some())
            .field("terminal", &self.terminal.is_some())
            .finish_non_exhaustive()
    }
}

impl<E> Default for Hooks<E, NoConflict> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Hooks<E, NoConflict> {
    /// No hooks: errors release the claim and are returned as they are.
    pub fn new() -> Self {
        Hooks {
            detect: None,
            terminal: None,
            on_conflict: NoConflict,
        }
    }
}

impl<E, C> Hooks<E, C> {
    /// How to view `E` as `&dyn Error` to search it for the backstop's unique
    /// violation: `idem::std_error` for error types implementing `std::error::Error`,
    /// `|e| Some(e.as_ref())` for `anyhow::Error`.
    pub fn detect(mut self, detect: DetectFn<E>) -> Self {
        self.detect = Some(detect);
        self
    }

    /// Declares terminal errors.
    pub fn terminal(mut self, terminal: Terminal<E>) -> Self {
        self.terminal = Some(terminal);
        self
    }

    /// The lookup that loads the existing result after a backstop violation. It must
    /// use a fresh connection: the failed transaction may be aborted.
    pub fn on_conflict<C2>(self, on_conflict: C2) -> Hooks<E, C2> {
        Hooks {
            detect: self.detect,
            terminal: self.terminal,
            on_conflict,
        }
    }
}
