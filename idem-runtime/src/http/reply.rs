//! Axum handlers under `#[idempotent]`: the response types the attribute
//! stores ([`Reply`]), [`Replied`] (their replays' header), and the layer that
//! marks replays of guarded calls made inside any handler ([`MarkReplaysLayer`]).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::{Serialize, de::DeserializeOwned};

use super::StoredResponse;
use crate::observe::reported;
pub use crate::reply::Replied;

/// The response types an `#[idempotent]` handler may return as its `Ok`
/// value, beside any `T: Serialize + DeserializeOwned`:
///
/// | handler returns `Result<_, E>` of | stored |
/// |---|---|
/// | `Json<T>` | `T` |
/// | `(StatusCode, Json<T>)` | the status and `T` |
/// | [`StoredResponse`](super::StoredResponse) (the adapter for `impl IntoResponse`) | status, allow-listed headers, body (or "body not kept") |
///
/// The attribute recognises them by name (`Json<..>`, a tuple ending in
/// `Json<..>`, `StoredResponse`: write them out rather than behind an alias)
/// and stores them through this trait, under the layer's keeping rule: a
/// status it does not keep (`5xx`, `408`, `425`, `429`, `401`, `403`) is
/// returned to the caller and the key released, so a retry runs the handler.
/// A replay answers `Idempotent-Replayed: true` with no extra layer: the
/// expansion wraps a `Json` `Ok` type in [`Replied`] (the handler's return
/// type becomes `Result<Replied<Json<T>>, E>`, still an axum response), and a
/// `StoredResponse` sets the header on its own.
pub use crate::reply::Reply;

impl<T: Serialize + DeserializeOwned + Send> Reply for Json<T> {
    type Stored = T;
    fn store(self) -> T {
        self.0
    }
    fn replay(stored: T) -> Self {
        Json(stored)
    }
}

impl<T: Serialize + DeserializeOwned + Send> Reply for (StatusCode, Json<T>) {
    type Stored = (u16, T);
    fn store(self) -> (u16, T) {
        (self.0.as_u16(), self.1.0)
    }
    fn replay((status, value): (u16, T)) -> Self {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
        (status, Json(value))
    }
    fn status(&self) -> Option<u16> {
        Some(self.0.as_u16())
    }
}

impl Reply for StoredResponse {
    type Stored = StoredResponse;
    fn store(self) -> StoredResponse {
        self
    }
    fn replay(stored: StoredResponse) -> Self {
        stored
    }
    fn status(&self) -> Option<u16> {
        Some(self.status().as_u16())
    }
}

/// The response, with `Idempotent-Replayed: true` when it was replayed.
impl<T: IntoResponse> IntoResponse for Replied<T> {
    fn into_response(self) -> Response {
        let replayed = self.is_replay();
        let mut response = self.into_inner().into_response();
        if replayed {
            super::mark_replayed(response.headers_mut());
        }
        response
    }
}

/// Adds `Idempotent-Replayed: true` to a response whose value came from a
/// guarded call's replay: it runs the handler inside
/// [`reported`](crate::reported), so it works for any technique called by the
/// handler, annotated handlers included.
///
/// ```
/// use axum::{Router, routing::post};
/// use idem::http::MarkReplaysLayer;
/// # async fn create_order() -> &'static str { "" }
/// let app: Router = Router::new().route("/orders", post(create_order)).layer(MarkReplaysLayer);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct MarkReplaysLayer;

impl<S> tower_layer::Layer<S> for MarkReplaysLayer {
    type Service = MarkReplays<S>;
    fn layer(&self, inner: S) -> MarkReplays<S> {
        MarkReplays(inner)
    }
}

/// The service of [`MarkReplaysLayer`].
#[derive(Debug, Clone)]
pub struct MarkReplays<S>(S);

impl<S, R> tower_service::Service<R> for MarkReplays<S>
where
    S: tower_service::Service<R, Response = Response>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        let fut = self.0.call(req);
        Box::pin(async move {
            let (result, report) = reported(fut).await;
            let mut response = result?;
            if report.is_some_and(|r| r.is_replay()) {
                super::mark_replayed(response.headers_mut());
            }
            Ok(response)
        })
    }
}
