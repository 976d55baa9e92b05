//! Problem-details answers (RFC 9457, `application/problem+json`) for the
//! layer's refusals, and `IntoResponse` for `idem::Error` so a handler's error
//! type can hand idem's errors to the client with the same status codes the
//! layer uses (IETF `Idempotency-Key` draft; Stripe for the details).

use std::time::Duration;

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

use crate::error::Error;

/// How long a client is told to wait before retrying a `409` (the layer's
/// default; [`IdempotencyLayer::retry_after`](super::IdempotencyLayer::retry_after)).
pub(super) const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// A problem-details response: `{"type","title","status","detail"}`.
///
/// ```
/// use axum::http::StatusCode;
/// let r = idem::http::problem(StatusCode::BAD_REQUEST, "missing key", "send one");
/// assert_eq!(r.headers()["content-type"], "application/problem+json");
/// ```
pub fn problem(status: StatusCode, title: &str, detail: &str) -> Response {
    let body = serde_json::json!({
        "type": "about:blank",
        "title": title,
        "status": status.as_u16(),
        "detail": detail,
    });
    let mut r = (status, body.to_string()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    r
}

/// The answer to an idem error, with `Retry-After` on a `409`.
pub(super) fn from_error(e: &Error, retry_after: Duration) -> Response {
    let (status, title) = match e {
        Error::InProgress { .. } => (
            StatusCode::CONFLICT,
            "a request with this idempotency key is still being processed",
        ),
        Error::PayloadMismatch { .. } => (
            StatusCode::UNPROCESSABLE_ENTITY,
            "this idempotency key was used with a different request",
        ),
        Error::Duplicate { .. } => (StatusCode::CONFLICT, "the request was already applied"),
        Error::NotFound { .. } => (StatusCode::NOT_FOUND, "not found"),
        Error::InvalidTransition { .. } => (
            StatusCode::CONFLICT,
            "the resource is not in a state this request applies to",
        ),
        Error::TokenInvalid { .. } => (
            StatusCode::CONFLICT,
            "the form token is unknown, used or expired",
        ),
        Error::LockBusy { .. } => (StatusCode::CONFLICT, "the resource is busy"),
        Error::StoreUnavailable { .. } => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the idempotency store is unavailable",
        ),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal error"),
    };
    // Client errors explain themselves; server errors do not show internals.
    let detail = if status.is_server_error() {
        String::from("retry later with the same idempotency key")
    } else {
        e.to_string()
    };
    let mut r = problem(status, title, &detail);
    if status == StatusCode::CONFLICT && e.is_retryable() {
        let secs = retry_after.as_secs().max(1);
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    r
}

/// `409` (in progress, with `Retry-After`, or another conflict), `422`
/// (payload mismatch), `404`, `503` (store unavailable), otherwise `500`; as
/// problem details.
impl IntoResponse for Error {
    fn into_response(self) -> Response {
        from_error(&self, DEFAULT_RETRY_AFTER)
    }
}
