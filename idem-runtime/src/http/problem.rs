//! Problem-details answers (RFC 9457, `application/problem+json`) for the
//! layer's refusals, and `IntoResponse` for `idem::Error` so a handler's error
//! type can hand idem's errors to the client with the same status codes the
//! layer uses (IETF `Idempotency-Key` draft; Stripe for the details).

use std::time::Duration;

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

use super::body::Unkept;
use crate::error::Error;

/// The longest `Retry-After` (the layer's default;
/// [`IdempotencyLayer::retry_after`](super::IdempotencyLayer::retry_after)).
pub(super) const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(60);

/// `Retry-After` when no lease is known (or the answer is not about one).
const SOON: Duration = Duration::from_secs(1);

/// How long to tell a client to wait: a claim's lease left (a dead holder's
/// claim frees the key no later; a live one finishes sooner), else a
/// second, at most `cap`.
fn wait_for(e: &Error, cap: Duration) -> Duration {
    match e {
        Error::InProgress {
            lease_left: Some(left),
            ..
        } => *left,
        _ => SOON,
    }
    .min(cap)
}

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
    problem_json(status, body.to_string())
}

fn problem_json(status: StatusCode, body: String) -> Response {
    let mut r = (status, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    r
}

/// Whose key a problem's detail may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Named<'a> {
    /// The client's own `Idempotency-Key` (the layer knows it).
    Client(&'a str),
    /// No key: the attribute's errors, whose rendered key is internal.
    None,
    /// The internal key and fingerprints, opted in for debugging.
    Raw,
}

/// `Retry-After` in whole seconds, rounded up (1.2 s is 2: a client told 1
/// would come back too early), at least 1.
pub(super) fn retry_after_secs(d: Duration) -> u64 {
    (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1)
}

/// The answer to an idem error, with `Retry-After` on a `409` (for a key in
/// progress, the holder's lease left, at most `cap`) and on an overloaded
/// store's `503`. The detail never shows the internal key
/// (`namespace:scene:scope:client-key`) or fingerprints unless `named` is
/// [`Named::Raw`].
pub(super) fn from_error(e: &Error, cap: Duration, named: Named<'_>) -> Response {
    let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let title = e.client_message();
    let secs = retry_after_secs(wait_for(e, cap));
    let key = match named {
        Named::Client(k) => format!("idempotency key `{k}`"),
        _ => "this idempotency key".to_owned(),
    };
    let detail = match (e, named) {
        // Server errors do not show internals, even to a debugging client.
        _ if status.is_server_error() => String::from("retry later with the same idempotency key"),
        (_, Named::Raw) => e.to_string(),
        (Error::InProgress { .. }, _) => format!(
            "the first request with {key} has not finished; retry after {secs} s with the same key"
        ),
        (Error::PayloadMismatch { .. }, _) => format!(
            "{key} was first used with a different request (method, path or body); \
             send a new key for a new request"
        ),
        _ => title.to_owned(),
    };
    let mut r = problem(status, title, &detail);
    let busy = status == StatusCode::CONFLICT && e.is_retryable();
    if busy || matches!(e, Error::Overloaded { .. }) {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    r
}

/// The answer to a repeat whose first response was kept without its body
/// (see [`Keeping`](super::Keeping)): `409`, naming the first status, why the
/// body was not kept and the limit; the handler does not run again.
pub(super) fn not_kept(first: StatusCode, why: Unkept, limit: usize) -> Response {
    let reason = match why {
        Unkept::OverLimit => format!("its body was longer than the {limit}-byte limit"),
        Unkept::StreamFailed => "its body failed while it was sent".to_owned(),
        Unkept::Trailers => "its body ended with trailers, which are not stored".to_owned(),
    };
    let detail = format!(
        "the first request with this idempotency key completed with status {}, but {reason}, \
         so it was not stored; the request was not run again",
        first.as_u16()
    );
    let body = serde_json::json!({
        "type": "about:blank",
        "title": "the response to this idempotency key was not kept",
        "status": StatusCode::CONFLICT.as_u16(),
        "detail": detail,
        "original_status": first.as_u16(),
        "not_kept": why,
        "body_limit": limit,
    });
    problem_json(StatusCode::CONFLICT, body.to_string())
}

/// A problem-details answer for an idem error with the internal key and the
/// fingerprints in its detail: for debugging only (the default answer, the
/// `IntoResponse` of `idem::Error`, shows neither).
pub fn debug_problem(e: &Error) -> Response {
    from_error(e, DEFAULT_RETRY_AFTER, Named::Raw)
}

/// `409` (in progress, with `Retry-After`, or another conflict), `422`
/// (payload mismatch), `404`, `503` (store unavailable or overloaded),
/// otherwise `500`; as problem details naming no internal key.
impl IntoResponse for Error {
    fn into_response(self) -> Response {
        from_error(&self, DEFAULT_RETRY_AFTER, Named::None)
    }
}
