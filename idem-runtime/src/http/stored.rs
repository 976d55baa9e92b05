//! [`StoredResponse`]: what the layer stores and replays, and the adapter an
//! `#[idempotent]` handler returning `impl IntoResponse` uses.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode};
use http_body_util::BodyExt;
use serde::{Deserialize, Serialize};

use super::body::{Collected, Failed, Unkept, collect};
use super::keep::{Keeping, never_replayed};
use super::problem::not_kept;
use crate::error::Error;

/// The body limit of [`Keeping`] by default: 256 KiB.
pub const DEFAULT_STORED_BODY_LIMIT: usize = 256 * 1024;

/// A response as stored: status, the chosen headers, the body bytes (or the
/// mark "body not kept", see [`Keeping`]).
///
/// A value decoded from the store is a replay: its [`IntoResponse`] adds
/// `Idempotent-Replayed: true`, and a replay whose body was not kept answers
/// `409` problem details naming the first status and why (the handler does not
/// run again). One built by [`StoredResponse::capture`] is not a replay: it
/// renders the whole first response.
///
/// As the return type of an `#[idempotent]` axum handler, it is the adapter
/// for a handler that would return `impl IntoResponse`:
///
/// ```
/// use axum::{http::StatusCode, response::IntoResponse};
/// use idem::http::StoredResponse;
///
/// # #[derive(Debug)] struct AppError;
/// # impl From<idem::Error> for AppError { fn from(_: idem::Error) -> Self { AppError } }
/// // #[idem::idempotent(key = "refund:<refund_id>")]
/// async fn refund(refund_id: String) -> Result<StoredResponse, AppError> {
///     let response = (StatusCode::ACCEPTED, [("location", "/refunds/r-1")], "queued");
///     Ok(StoredResponse::capture(response).await?)
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: StoredBody,
    /// Set on every value decoded from the store.
    #[serde(skip, default = "yes")]
    replayed: bool,
    /// The first response's body when it was not stored: in memory only, for
    /// the first caller.
    #[serde(skip)]
    first: First,
    /// Every header of the first response (cookies included), for the first
    /// caller only: never stored.
    #[serde(skip)]
    first_headers: Option<http::HeaderMap>,
}

fn yes() -> bool {
    true
}

/// Body bytes: text when they are UTF-8 (JSON, HTML: compact in the record),
/// raw bytes otherwise; or the mark that the body was not kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum StoredBody {
    #[serde(rename = "t")]
    Text(String),
    #[serde(rename = "b")]
    Bytes(Vec<u8>),
    #[serde(rename = "n")]
    NotKept { why: Unkept, limit: usize },
}

/// The first caller's body of a response stored as "body not kept".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum First {
    #[default]
    None,
    Bytes(Bytes),
    Failed(String),
}

fn kept_headers(parts: &http::response::Parts, keep: &Keeping) -> Vec<(String, String)> {
    parts
        .headers
        .iter()
        .filter(|(name, _)| keep.stores_header(name))
        .filter_map(|(name, v)| Some((name.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect()
}

impl StoredResponse {
    /// Keeps the status, the headers `keep` allows (values that are not
    /// UTF-8 are dropped) and `body`.
    pub(super) fn new(parts: &http::response::Parts, keep: &Keeping, body: &Bytes) -> Self {
        let body = match std::str::from_utf8(body) {
            Ok(text) => StoredBody::Text(text.to_owned()),
            Err(_) => StoredBody::Bytes(body.to_vec()),
        };
        StoredResponse {
            status: parts.status.as_u16(),
            headers: kept_headers(parts, keep),
            body,
            replayed: false,
            first: First::None,
            first_headers: None,
        }
    }

    /// The status and headers of a response whose body is not kept.
    pub(super) fn without_body(parts: &http::response::Parts, keep: &Keeping, why: Unkept) -> Self {
        StoredResponse {
            status: parts.status.as_u16(),
            headers: kept_headers(parts, keep),
            body: StoredBody::NotKept {
                why,
                limit: keep.body_limit,
            },
            replayed: false,
            first: First::None,
            first_headers: None,
        }
    }

    /// Renders `response` and keeps it by the default [`Keeping`] rule: its
    /// status, the allow-listed headers (never `Set-Cookie`, `Date`, lengths or
    /// hop-by-hop headers) and its body up to 256 KiB. A longer body, or one
    /// whose stream fails, is marked "body not kept": this value still renders
    /// the whole first response (or its failure), and a replay answers `409`.
    /// Never fails today; the `Result` leaves room for a future check.
    pub async fn capture(response: impl IntoResponse) -> Result<Self, Error> {
        Self::capture_with(response, &Keeping::default()).await
    }

    /// [`capture`](Self::capture) under `keep` (more headers, another limit).
    pub async fn capture_with(response: impl IntoResponse, keep: &Keeping) -> Result<Self, Error> {
        let (mut parts, body) = response.into_response().into_parts();
        let mut stored = match collect(body, keep.body_limit).await {
            Collected::Whole(bytes) => Self::new(&parts, keep, &bytes),
            Collected::Passed(why, rest) => {
                let mut stored = Self::without_body(&parts, keep, why);
                // The first caller still gets the whole body (or its failure).
                stored.first = match rest.collect().await {
                    Ok(all) => First::Bytes(all.to_bytes()),
                    Err(e) => First::Failed(e.to_string()),
                };
                stored
            }
        };
        // The first caller gets every header (its cookie too); the body's
        // length is recomputed.
        parts.headers.remove(http::header::CONTENT_LENGTH);
        stored.first_headers = Some(parts.headers);
        Ok(stored)
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// True when this value came from the store.
    pub fn is_replay(&self) -> bool {
        self.replayed
    }

    /// Why the body was not kept, for a response stored as "body not kept".
    pub fn body_not_kept(&self) -> Option<Unkept> {
        match self.body {
            StoredBody::NotKept { why, .. } => Some(why),
            _ => None,
        }
    }
}

/// Appends stored headers. One that no longer parses (a foreign record), or
/// one that must never be replayed (a record from an older version), is skipped.
/// The values become header values without a copy.
fn append_headers(stored: Vec<(String, String)>, headers: &mut http::HeaderMap) {
    for (name, value) in stored {
        // `HeaderValue::from_str`'s rule (visible ASCII and tabs), which
        // `from_maybe_shared` relaxes.
        let visible = value
            .bytes()
            .all(|b| b == b'\t' || (b' '..=b'~').contains(&b));
        if let (true, Ok(n), Ok(v)) = (
            visible,
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_maybe_shared(Bytes::from(value)),
        ) && !never_replayed(&n)
        {
            headers.append(n, v);
        }
    }
}

impl IntoResponse for StoredResponse {
    fn into_response(self) -> Response {
        let status = self.status();
        let StoredResponse {
            headers,
            body,
            replayed,
            first,
            first_headers,
            ..
        } = self;
        let body = match (body, replayed) {
            (StoredBody::NotKept { why, limit }, true) => {
                let mut r = not_kept(status, why, limit);
                let mut kept = http::HeaderMap::new();
                append_headers(headers, &mut kept);
                for (name, value) in &kept {
                    // The problem's own type describes its body.
                    if !name.as_str().starts_with("content-") {
                        r.headers_mut().append(name, value.clone());
                    }
                }
                super::mark_replayed(r.headers_mut());
                return r;
            }
            (StoredBody::Text(t), _) => Body::from(t),
            (StoredBody::Bytes(b), _) => Body::from(b),
            (StoredBody::NotKept { .. }, false) => match first {
                First::Bytes(b) => Body::from(b),
                First::Failed(e) => Body::new(Failed(Some(e.into()))),
                First::None => Body::empty(),
            },
        };
        let mut response = Response::new(body);
        *response.status_mut() = status;
        match first_headers {
            Some(all) if !replayed => *response.headers_mut() = all,
            _ => append_headers(headers, response.headers_mut()),
        }
        if replayed {
            super::mark_replayed(response.headers_mut());
        }
        response
    }
}

#[cfg(test)]
#[path = "stored_tests.rs"]
mod tests;
