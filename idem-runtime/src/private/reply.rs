//! `#[idempotent]` on axum handlers: a handler whose `Ok` value is an axum
//! response (`Json<T>`, `(StatusCode, Json<T>)`, `StoredResponse`) stores what
//! [`Reply::store`] returns. The expansion names the return type as `Http<R>`,
//! whose `Ok` is the stored form, so the one engine and the one `Returns` check
//! serve it too.
//!
//! The keeping rule ([`keeps_status`]) applies as in the layer: a response
//! whose status is not kept (`5xx`, `429`, ...) is handed back to the caller
//! while the engine releases the key. The engine stores every `Ok`, so such a
//! response leaves the body as an idem error (released like any error) and
//! waits in an [`Unkept`] slot beside the call; [`finish`] returns it in
//! place of that error.

use std::future::Future;
use std::sync::Mutex;

use super::bounds::{IdemErrorInto, IsResult};
use crate::error::Error;
use crate::observe::CallReport;
pub use crate::observe::reported;
use crate::reply::keeps_status;
pub use crate::reply::{Replied, Reply};

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

impl<R: IsResult<Ok: Reply, Err: IdemErrorInto>> Http<R> {
    /// Wraps the handler's result, setting aside a response the keeping rule
    /// does not keep: the engine sees an error (and releases the key), the
    /// caller gets the response back from `slot` in [`finish`].
    pub fn keep(slot: &Unkept<R>, r: R) -> Self {
        match r.into_result() {
            Ok(reply) if reply.status().is_some_and(|s| !keeps_status(s, false)) => {
                let status = reply.status().unwrap_or_default();
                *slot.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(reply);
                let e = Error::Codec {
                    key: String::new(),
                    detail: format!("status {status} is not kept: the key is released"),
                };
                Http(R::from_result(Err(e.into())))
            }
            r => Http(R::from_result(r)),
        }
    }
}

/// The response of a call whose status was not kept, set aside for its caller.
#[derive(Debug)]
pub struct Unkept<R: IsResult>(Mutex<Option<R::Ok>>);

impl<R: IsResult> Unkept<R> {
    /// An empty slot.
    pub fn new() -> Self {
        Unkept(Mutex::new(None))
    }
}

impl<R: IsResult> Default for Unkept<R> {
    fn default() -> Self {
        Self::new()
    }
}

/// The handler's result: the response set aside (not kept) if there is one,
/// otherwise what the call returned.
pub fn finish<R: IsResult>(slot: &Unkept<R>, http: Http<R>) -> R {
    match slot.0.lock().unwrap_or_else(|p| p.into_inner()).take() {
        Some(reply) => R::from_result(Ok(reply)),
        None => http.0,
    }
}

/// [`finish`] for a handler whose `Ok` type the expansion wrapped in
/// [`Replied`] (`Json<T>` cannot carry a header): marks replays, so they
/// answer `Idempotent-Replayed: true` with no extra layer.
pub fn finish_marked<R, O>(slot: &Unkept<R>, (http, report): (Http<R>, Option<CallReport>)) -> O
where
    R: IsResult,
    O: IsResult<Ok = Replied<R::Ok>, Err = R::Err>,
{
    let replayed = report.is_some_and(|r| r.is_replay());
    O::from_result(
        finish(slot, http)
            .into_result()
            .map(|ok| Replied::new(ok, replayed)),
    )
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

// `Returns` comes from its blanket impl: the stored form is `Storable`.

/// An `on_conflict` lookup returning the handler's response → its stored form.
pub async fn stored<T: Reply, E>(
    lookup: impl Future<Output = Result<T, E>>,
) -> Result<T::Stored, E> {
    lookup.await.map(Reply::store)
}
