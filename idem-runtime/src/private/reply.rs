//! `#[idempotent]` on axum handlers: a handler whose `Ok` value is an axum
//! response (`Json<T>`, `(StatusCode, Json<T>)`) stores what [`Reply::store`]
//! returns. The expansion names the return type as `Http<R>`, whose `Ok` is the
//! stored form, so the one engine and the one `Returns` check serve it too.

use std::future::Future;

use super::bounds::{IdemErrorInto, IsResult, Returns};
pub use crate::reply::Reply;

/// A handler's return type `R` seen through its stored form.
#[derive(Debug)]
pub struct Http<R>(R);

impl<R> Http<R> {
    /// Wraps the handler's result.
    pub fn wrap(r: R) -> Self {
        Http(r)
    }
    /// The handler's result.
    pub fn into_inner(self) -> R {
        self.0
    }
}

impl<R: IsResult<Ok: Reply>> IsResult for Http<R> {
    type Ok = <R::Ok as Reply>::Stored;
    type Err = R::Err;
    fn into_result(self) -> Result<Self::Ok, Self::Err> {
        self.0.into_result().map(Reply::store)
    }
    fn from_result(r: Result<Self::Ok, Self::Err>) -> Self {
        Http(R::from_result(r.map(Reply::replay)))
    }
}

impl<R: IsResult<Ok: Reply, Err: IdemErrorInto>> Returns for Http<R> {}

/// An `on_conflict` lookup returning the handler's response → its stored form.
pub async fn stored<T: Reply, E>(
    lookup: impl Future<Output = Result<T, E>>,
) -> Result<T::Stored, E> {
    lookup.await.map(Reply::store)
}
