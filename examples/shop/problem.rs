//! One error format at the edge: every error answer leaves the
//! service as `application/problem+json` with idem's fields (`type`, `title`,
//! `status`, `detail`; built by `idem::http::problem`). idem's own refusals
//! and the shop's errors already are; this converts the rest: axum's
//! extractor rejections (invalid JSON, a missing `Content-Type`, a body over
//! the limit), the router's `404`/`405`, and tower-http's `413`. Their plain
//! text becomes the `detail`; their other headers (`Allow`, `Retry-After`)
//! stay.
//!
//! What never reaches a route cannot be converted: a request hyper cannot
//! parse gets hyper's bare status line, and a connection past a timeout is
//! closed without an answer.

use axum::http::header;
use axum::response::Response;
use http_body_util::BodyExt;

/// The longest plain-text rejection kept as the `detail`.
const MAX_DETAIL: usize = 1024;

/// An error answer that is not problem details yet becomes one.
pub(crate) async fn uniform(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_problem(&response) {
        return response;
    }
    let plain = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_none_or(|v| v.as_bytes().starts_with(b"text/plain"));
    if !plain {
        return response; // a body of its own format (HTML, JSON) the handler chose
    }
    let (parts, body) = response.into_parts();
    let text = match http_body_util::Limited::new(body, MAX_DETAIL)
        .collect()
        .await
    {
        Ok(b) => String::from_utf8_lossy(&b.to_bytes()).trim().to_owned(),
        Err(_) => String::new(),
    };
    let title = status.canonical_reason().unwrap_or("error");
    let detail = if status.is_server_error() || text.is_empty() {
        title.to_owned()
    } else {
        text
    };
    let mut out = idem::http::problem(status, title, &detail);
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            out.headers_mut().append(name, value.clone());
        }
    }
    out
}

fn is_problem(r: &Response) -> bool {
    r.headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/problem+json"))
}
