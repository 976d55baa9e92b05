//! Axum handlers under `#[idempotent]`: the response types the attribute
//! stores ([`Reply`]) and the layer that marks their replays
//! ([`MarkReplaysLayer`]).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::Json;
use axum::response::Response;
use http::{HeaderValue, StatusCode};
use serde::{Serialize, de::DeserializeOwned};

use super::IDEMPOTENT_REPLAYED;
use crate::observe::reported;

/// The response types an `#[idempotent]` handler may return as its `Ok`
/// value, beside any `T: Serialize + DeserializeOwned`:
///
/// | handler returns `Result<_, E>` of | stored |
/// |---|---|
/// | `Json<T>` | `T` |
/// | `(StatusCode, Json<T>)` | the status and `T` |
/// | [`StoredResponse`](super::StoredResponse) (the adapter for `impl IntoResponse`) | status, headers, body |
///
/// The attribute recognises the first two by name (`Json<..>`, a tuple ending
/// in `Json<..>`: write them out rather than behind an alias) and stores them
/// through this trait. A replay sets `Idempotent-Replayed: true` when the
/// route has a [`MarkReplaysLayer`] (a `Json<T>` cannot carry a header itself);
/// a `StoredResponse` sets it on its own.
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
                response
                    .headers_mut()
                    .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
            }
            Ok(response)
        })
    }
}
