//! [`Reply`]: a response type an `#[idempotent]` handler returns as its `Ok`
//! value, stored in another form. A value type: the macro surface
//! (`__private::Http`) and the HTTP module (its axum impls) both build on it.

use serde::{Serialize, de::DeserializeOwned};

/// An axum response type an `#[idempotent]` handler may return as its `Ok`
/// value: what is stored is [`Reply::Stored`], and a replay rebuilds the
/// response from it (implemented for `Json<T>` and `(StatusCode, Json<T>)`
/// with the `axum` feature; see `idem::http`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a response `#[idempotent]` can store",
    label = "the `Ok` type names `Json`, so it is stored as an axum response",
    note = "enable idem's `axum` feature; `Json<T>` and `(StatusCode, Json<T>)` with `T: Serialize + DeserializeOwned` are stored, other responses go through `idem::http::StoredResponse`"
)]
pub trait Reply: Sized {
    /// What is stored.
    type Stored: Serialize + DeserializeOwned + Send;
    /// The stored form.
    fn store(self) -> Self::Stored;
    /// The response again.
    fn replay(stored: Self::Stored) -> Self;
    /// The response's status code, when it has one: a status the keeping rule
    /// (`keeps_status`) does not keep is returned but not stored, and the
    /// key is released. `None` (a bare `Json<T>`, i.e. `200`) is kept.
    fn status(&self) -> Option<u16> {
        None
    }
}

/// The keeping rule, by status code: what the HTTP layer and `#[idempotent]`
/// handlers store and replay. `2xx`–`4xx` are kept: the request was handled
/// and a repeat must get the same answer. Not kept (released, so a retry runs
/// again): `5xx` (the server failed; the work may not have happened), `408`,
/// `425` and `429` (the request was not handled: timed out, too early,
/// throttled), and, unless `auth_failures`, `401` and `403` (refused before
/// the work began: a client that authenticates and retries must be served).
/// `1xx` is never a final response and is not kept.
pub(crate) fn keeps_status(status: u16, auth_failures: bool) -> bool {
    match status {
        408 | 425 | 429 => false,
        401 | 403 => auth_failures,
        200..=499 => true,
        _ => false,
    }
}

/// The `Ok` value of an `#[idempotent]` axum handler that returns `Json<T>`
/// or `(StatusCode, Json<T>)`, with whether it was replayed: the expansion
/// wraps the declared `Ok` type in it, so a replay answers
/// `Idempotent-Replayed: true` (a `Json<T>` cannot carry a header) with no
/// extra layer. It dereferences to the response; [`Replied::into_inner`]
/// unwraps it for a caller that calls the handler directly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replied<T> {
    value: T,
    replayed: bool,
}

impl<T> Replied<T> {
    /// A response, replayed or not.
    pub fn new(value: T, replayed: bool) -> Self {
        Replied { value, replayed }
    }

    /// True when the response came from the store (or a concurrent first call).
    pub fn is_replay(&self) -> bool {
        self.replayed
    }

    /// The response.
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T> std::ops::Deref for Replied<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}
