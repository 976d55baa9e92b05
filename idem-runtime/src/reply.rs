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
}
