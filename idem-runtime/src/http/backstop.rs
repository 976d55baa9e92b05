//! The layer's database backstop, as `#[idempotent(backstop = .., on_conflict = ..)]`
//! has it: a handler whose insert hits the named unique constraint (the front
//! store lost the first request's record, or a process raced it) gets the
//! existing result from `on_conflict` instead of an error, and that response
//! is stored for later repeats.
//!
//! The layer sees responses, not the handler's errors, so the handler hands
//! its error to the layer as an [`ErrorCause`] extension on the response it
//! returns. The guard's engine then searches it exactly as it searches the
//! attribute's `Err` (the configured detectors, the catalog, a misspelt
//! constraint name as `Error::Config`).

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::Request;

use super::layer::Settings;
use super::stored::StoredResponse;
use crate::error::Error;
use crate::hooks::OnConflict;

/// The error behind a handler's response, attached as a response extension so
/// the layer's backstop can search it for the constraint's unique violation.
///
/// ```
/// # use axum::response::{IntoResponse, Response};
/// # use http::StatusCode;
/// fn conflict(e: sqlx::Error) -> Response {
///     let mut r = (StatusCode::CONFLICT, "order exists").into_response();
///     r.extensions_mut().insert(idem::http::ErrorCause::new(e));
///     r
/// }
/// # let _ = conflict;
/// ```
#[derive(Clone)]
pub struct ErrorCause(Arc<dyn StdError + Send + Sync + 'static>);

impl ErrorCause {
    /// Wraps the handler's error (its `source()` chain is searched too).
    pub fn new(error: impl StdError + Send + Sync + 'static) -> Self {
        ErrorCause(Arc::new(error))
    }

    /// The wrapped error.
    pub fn error(&self) -> &(dyn StdError + 'static) {
        &*self.0
    }
}

impl fmt::Debug for ErrorCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ErrorCause")
            .field(&self.0.to_string())
            .finish()
    }
}

type Lookup = Pin<Box<dyn Future<Output = Response> + Send>>;

/// The layer's `on_conflict`: the request (its parts and body bytes) to the
/// response that stands for the existing result.
pub(super) type ConflictFn = dyn Fn(Request<Bytes>) -> Lookup + Send + Sync;

/// Boxes a user's lookup.
pub(super) fn conflict_fn<F, Fut, R>(f: F) -> Arc<ConflictFn>
where
    F: Fn(Request<Bytes>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoResponse,
{
    Arc::new(move |req| {
        let fut = f(req);
        Box::pin(async move { fut.await.into_response() })
    })
}

/// One request's lookup, in the engine's [`OnConflict`] form: `None` without
/// an `on_conflict` (the layer then answers `Error::Duplicate`). Its response
/// is kept as a first response is ([`StoredResponse::capture_with`] under the
/// layer's keeping rule), and this request gets it whole.
pub(super) struct LayerConflict {
    /// The lookup and the request it is given; built only on a route that has
    /// both a backstop and a lookup, so other requests copy nothing.
    pub(super) lookup: Option<(Arc<ConflictFn>, Request<Bytes>)>,
    pub(super) settings: Arc<Settings>,
}

impl<E: From<Error> + Send> OnConflict<StoredResponse, E> for LayerConflict {
    type Future = Pin<Box<dyn Future<Output = Result<StoredResponse, E>> + Send>>;

    fn start(self) -> Option<Self::Future> {
        let (lookup, request) = self.lookup?;
        let settings = self.settings;
        Some(Box::pin(async move {
            let response = lookup(request).await;
            Ok(StoredResponse::capture_with(response, &settings.keep).await?)
        }))
    }
}
