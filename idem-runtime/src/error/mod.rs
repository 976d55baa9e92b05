//! The one error type every idem operation returns.
//!
//! Each variant names the key it concerns (already rendered, so redaction of
//! sensitive parts happened when the key was built) because an operator reading a
//! log line must be able to find the record without re-deriving it.

use std::fmt;
use std::time::Duration;

pub use store::{BoxError, Reason, StoreError, Unreplicated};

mod store;

/// Everything that can go wrong in a guarded call, a technique helper or a store.
///
/// Business errors are never wrapped in this type: they stay the caller's `E`,
/// which must implement `From<idem::Error>` so a guarded function can return both.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Another caller holds the claim for this key and `concurrent = "reject"` is set,
    /// or the `wait` budget ran out before the holder finished.
    #[error("idempotency key `{key}` is being processed by another caller (waited {waited:?})")]
    InProgress {
        /// The rendered key.
        key: String,
        /// How long this caller waited before giving up.
        waited: Duration,
        /// How long the holder's claim had left when this caller gave up:
        /// its lease, which a live holder renews while its body runs and a
        /// dead one's runs out (the HTTP layer's `Retry-After`). `None` when
        /// the store did not say (an in-process wait while the store is
        /// unreachable).
        lease_left: Option<Duration>,
    },
    /// The key was used before with a different request payload.
    #[error(
        "idempotency key `{key}` was first used with a different payload (fingerprint {stored}, this request {given})"
    )]
    PayloadMismatch {
        /// The rendered key.
        key: String,
        /// Hex of the fingerprint stored with the first request.
        stored: String,
        /// Hex of this request's fingerprint.
        given: String,
    },
    /// The business effect already exists (a unique constraint said so) and no
    /// `on_conflict` lookup was given to load it.
    #[error("duplicate request for `{key}`: constraint `{constraint}` already holds a row for it")]
    Duplicate {
        /// The rendered key.
        key: String,
        /// The unique constraint that rejected the insert.
        constraint: String,
    },
    /// A row the technique needs does not exist.
    #[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
    #[error("no row for `{key}`")]
    NotFound {
        /// The business key that was looked up.
        key: String,
    },
    /// A state-machine update found the row in a state from which the edge does not start.
    #[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
    #[error("cannot move `{key}` from `{from}` to `{to}`: it is `{current}`")]
    InvalidTransition {
        /// The business key.
        key: String,
        /// The edge's source state.
        from: String,
        /// The edge's target state.
        to: String,
        /// The state the row is in.
        current: String,
    },
    /// A one-time token was unknown, already consumed, or expired.
    #[error("token for `{key}` is invalid, used or expired")]
    TokenInvalid {
        /// The token scope and (redacted) value.
        key: String,
    },
    /// A distributed lock could not be taken within its wait budget.
    #[error("lock `{key}` is held by another owner")]
    LockBusy {
        /// The lock key.
        key: String,
    },
    /// The store did not answer in time, refused the connection, or the circuit
    /// breaker is open after repeated failures. The call failed closed: the body did
    /// not run (unless `degrade = "backstop"` was chosen).
    #[error("idempotency store `{store}` is unavailable for `{key}`: {reason}")]
    StoreUnavailable {
        /// The rendered key.
        key: String,
        /// The store's name (`memory`, `redis`, `sqlite`, ...).
        store: &'static str,
        /// What failed.
        reason: String,
        /// The driver's error (a `sqlx::Error`, a `redis::RedisError`, ...), when
        /// the store kept it: this error's `source()`, for downcasting.
        #[source]
        source: Option<BoxError>,
    },
    /// The store answers, but a burst of operations filled its queue (see
    /// `store::SendQueue`) and this call got no turn to send its operation within
    /// its budget (what was left of its `wait`; the operation timeout for a
    /// caller that does not wait). Nothing was sent
    /// and the body did not run; not an outage, so the circuit breaker is
    /// untouched and `degrade` does not apply. Retry later (an HTTP service
    /// would answer 503 with `Retry-After`).
    #[error("idempotency store `{store}` is overloaded for `{key}`: {reason}")]
    Overloaded {
        /// The rendered key.
        key: String,
        /// The store's name.
        store: &'static str,
        /// How long the call queued, and the queue's state then.
        reason: String,
    },
    /// The store cannot hold this key as rendered: longer than a SQL record's key
    /// column (`store::sql::MAX_KEY_BYTES`, 768 bytes), or a NUL byte on
    /// PostgreSQL. The caller's input, not an outage: nothing was sent, the body
    /// did not run, the circuit breaker is untouched, and a retry with the same
    /// key fails the same way. Shorten the namespace or scene, or keep control
    /// characters out of them.
    #[error("idempotency key {key:?} cannot be stored: {reason}")]
    InvalidKey {
        /// The rendered key (quoted and escaped in the message).
        key: String,
        /// Why the store refused it.
        reason: String,
    },
    /// A macro used the global handle but `idem::install` was never called.
    #[error(
        "no idem handle installed: call `idem::install(handle)` at start-up or pass `handle = ...`"
    )]
    NotInstalled,
    /// A stored value could not be decoded: a different `version`, another format,
    /// or a corrupt record. Never returns garbage.
    #[error("stored record for `{key}` cannot be decoded: {detail}")]
    Codec {
        /// The rendered key.
        key: String,
        /// What was wrong.
        detail: String,
    },
    /// Two different functions render keys under the same scene prefix, so one could
    /// replay the other's result.
    #[error(
        "scene `{scene}` is used by both `{first}` and `{second}`; give each function its own key prefix"
    )]
    SceneConflict {
        /// The literal scene prefix.
        scene: String,
        /// The function that registered it first.
        first: String,
        /// The function that collided.
        second: String,
    },
    /// The configuration cannot work (bad URL, lease not shorter than ttl, ...).
    #[error("invalid idem configuration: {0}")]
    Config(String),
    /// A start-up check found a missing table, constraint or a dangerous setting.
    #[error("idem verification failed: {0}")]
    Verify(String),
    /// The database aborted (or refused to continue) the caller's transaction
    /// because of a concurrent one: a deadlock victim (MySQL/MariaDB 1213), a
    /// lock-wait timeout (1205), a serialization failure (PostgreSQL 40001
    /// under `REPEATABLE READ`/`SERIALIZABLE`, 40P01), SQLite busy (a deferred
    /// transaction that must be `BEGIN IMMEDIATE`). Nothing of the transaction
    /// can commit: roll it back and run it again; an idempotent retry replays
    /// what the winner committed. [`Error::is_retryable`] is true.
    #[error("transaction for `{key}` lost to a concurrent one; roll back and retry: {detail}")]
    TxConflict {
        /// The key or business key involved.
        key: String,
        /// The driver's message and what to do.
        detail: String,
    },
    /// A store could not be set up or checked outside a keyed call (connecting,
    /// migrating, `verify()`): the store's error is the `source()`, and the
    /// driver's error is its `source()` in turn. Every start-up step converts to
    /// this type with `?`: `RedisStore::connect(url).await?` in a function
    /// returning `idem::Result`.
    #[error("idem store: {0}")]
    Store(#[from] StoreError),
    /// The database reported an error the technique cannot interpret.
    #[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
    #[error("database error on `{key}`: {detail}")]
    Database {
        /// The key or business key involved.
        key: String,
        /// The driver's message.
        detail: String,
    },
}

impl Error {
    /// The key this error concerns, when it has one.
    pub fn key(&self) -> Option<&str> {
        match self {
            Error::InProgress { key, .. }
            | Error::PayloadMismatch { key, .. }
            | Error::Duplicate { key, .. }
            | Error::TokenInvalid { key }
            | Error::LockBusy { key }
            | Error::StoreUnavailable { key, .. }
            | Error::Overloaded { key, .. }
            | Error::InvalidKey { key, .. }
            | Error::Codec { key, .. }
            | Error::TxConflict { key, .. } => Some(key),
            #[cfg(feature = "sql")]
            Error::NotFound { key }
            | Error::InvalidTransition { key, .. }
            | Error::Database { key, .. } => Some(key),
            _ => None,
        }
    }

    /// True for failures a client may retry later with the same key.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::InProgress { .. }
                | Error::StoreUnavailable { .. }
                | Error::Overloaded { .. }
                | Error::LockBusy { .. }
                | Error::TxConflict { .. }
        )
    }

    /// The HTTP status a service answers this error with: `409` (in progress,
    /// a duplicate, an invalid token or transition, a busy lock), `422` (the
    /// key was used with another payload), `404`, `503` (the store is
    /// unavailable or overloaded), otherwise `500`. The same codes as the
    /// `Idempotency-Key` layer and `IntoResponse` (feature `axum`).
    ///
    /// ```
    /// use std::time::Duration;
    /// let e = idem::Error::InProgress {
    ///     key: "shop:order-create:7:r-1".into(),
    ///     waited: Duration::from_secs(5),
    ///     lease_left: Some(Duration::from_secs(20)),
    /// };
    /// assert_eq!(e.status(), 409);
    /// assert!(!e.client_message().contains("r-1"), "no internal key");
    /// assert!(e.to_string().contains("shop:order-create:7:r-1"), "for the logs");
    /// ```
    pub fn status(&self) -> u16 {
        self.public().0
    }

    /// A message safe to show the client: it never contains the internal key
    /// (`namespace:scene:…`), fingerprints or a store's error text, which
    /// [`Display`](fmt::Display) shows for your logs. Answer a client with
    /// [`status`](Self::status) and this (axum: `e.into_response()` does, as
    /// problem details).
    pub fn client_message(&self) -> &'static str {
        self.public().1
    }

    /// Status and client-safe title, in one place for every answer.
    fn public(&self) -> (u16, &'static str) {
        match self {
            Error::InProgress { .. } => (
                409,
                "a request with this idempotency key is still being processed",
            ),
            Error::PayloadMismatch { .. } => (
                422,
                "this idempotency key was used with a different request",
            ),
            Error::Duplicate { .. } => (409, "the request was already applied"),
            #[cfg(feature = "sql")]
            Error::NotFound { .. } => (404, "not found"),
            #[cfg(feature = "sql")]
            Error::InvalidTransition { .. } => (
                409,
                "the resource is not in a state this request applies to",
            ),
            Error::TokenInvalid { .. } => (409, "the form token is unknown, used or expired"),
            Error::LockBusy { .. } => (409, "the resource is busy"),
            Error::StoreUnavailable { .. } => (503, "the idempotency store is unavailable"),
            Error::Overloaded { .. } => (503, "the idempotency store is overloaded"),
            _ => (500, "internal error"),
        }
    }

    pub(crate) fn codec(key: &str, detail: impl fmt::Display) -> Self {
        Error::Codec {
            key: key.to_owned(),
            detail: detail.to_string(),
        }
    }
}

/// A `Result` with [`Error`] as the error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::StoreError;
    use super::*;
    use crate::store::Warning;

    #[derive(Debug, thiserror::Error)]
    #[error("driver: connection refused")]
    struct Driver;

    /// A start-up failure converts with `?` and keeps the whole chain: idem's
    /// error, the store's, the driver's.
    #[test]
    fn store_errors_convert_and_keep_their_cause() {
        fn start() -> Result<()> {
            Err(StoreError::unavailable("redis: cannot connect").with_source(Driver))?;
            Ok(())
        }
        let e = start().unwrap_err();
        assert_eq!(
            e.to_string(),
            "idem store: unavailable: redis: cannot connect"
        );
        let store = e.source().expect("the store error");
        assert!(store.downcast_ref::<StoreError>().is_some());
        let driver = store.source().expect("the driver error");
        assert!(driver.downcast_ref::<Driver>().is_some());
        assert_eq!(
            Warning("maxmemory-policy".into()).to_string(),
            "maxmemory-policy"
        );
    }
}
