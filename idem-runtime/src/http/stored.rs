//! [`StoredResponse`]: what the layer stores and replays, and the adapter an
//! `#[idempotent]` handler returning `impl IntoResponse` uses.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode};
use serde::{Deserialize, Serialize};

use super::IDEMPOTENT_REPLAYED;
use super::body::{Collected, collect};
use crate::error::Error;

/// The store limit [`StoredResponse::capture`] applies: 256 KiB.
pub const DEFAULT_STORED_BODY_LIMIT: usize = 256 * 1024;

/// A response as stored: status, the chosen headers, the body bytes.
///
/// A value decoded from the store is a replay: its [`IntoResponse`] adds
/// `Idempotent-Replayed: true`. One built by [`StoredResponse::capture`] is not.
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
}

fn yes() -> bool {
    true
}

/// Body bytes: text when they are UTF-8 (JSON, HTML: compact in the record),
/// raw bytes otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum StoredBody {
    #[serde(rename = "t")]
    Text(String),
    #[serde(rename = "b")]
    Bytes(Vec<u8>),
}

impl StoredResponse {
    /// Keeps the status, the headers named in `keep` (values that are not
    /// UTF-8 are dropped) and `body`.
    pub(super) fn new(parts: &http::response::Parts, keep: &[HeaderName], body: &Bytes) -> Self {
        let headers = keep
            .iter()
            .flat_map(|name| {
                parts.headers.get_all(name).iter().filter_map(move |v| {
                    Some((name.as_str().to_owned(), v.to_str().ok()?.to_owned()))
                })
            })
            .collect();
        let body = match std::str::from_utf8(body) {
            Ok(text) => StoredBody::Text(text.to_owned()),
            Err(_) => StoredBody::Bytes(body.to_vec()),
        };
        StoredResponse {
            status: parts.status.as_u16(),
            headers,
            body,
            replayed: false,
        }
    }

    /// Renders `response` and keeps its status, body and every header, if its
    /// body is at most [`DEFAULT_STORED_BODY_LIMIT`] bytes; a larger body is
    /// `Error::Codec` (the call fails and is released, nothing is stored).
    pub async fn capture(response: impl IntoResponse) -> Result<Self, Error> {
        let (parts, body) = response.into_response().into_parts();
        match collect(body, DEFAULT_STORED_BODY_LIMIT).await {
            Collected::Whole(bytes) => {
                let names: Vec<HeaderName> = parts.headers.keys().cloned().collect();
                Ok(Self::new(&parts, &names, &bytes))
            }
            Collected::Passed(_) => Err(Error::Codec {
                key: String::new(),
                detail: format!(
                    "the response body is longer than {DEFAULT_STORED_BODY_LIMIT} bytes or failed: not stored"
                ),
            }),
        }
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// True when this value came from the store.
    pub fn is_replay(&self) -> bool {
        self.replayed
    }
}

impl IntoResponse for StoredResponse {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = match self.body {
            StoredBody::Text(t) => Body::from(t),
            StoredBody::Bytes(b) => Body::from(b),
        };
        let mut response = Response::new(body);
        *response.status_mut() = status;
        let headers = response.headers_mut();
        for (name, value) in &self.headers {
            // A stored header that no longer parses (a foreign record) is skipped.
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                headers.append(n, v);
            }
        }
        if self.replayed {
            headers.insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn round_trip_marks_replays() {
        let first = StoredResponse::capture((
            StatusCode::CREATED,
            [("location", "/orders/1"), ("x-a", "b")],
            "{\"id\":1}",
        ))
        .await
        .unwrap();
        assert!(!first.is_replay());
        let json = serde_json::to_string(&first).unwrap();
        let again: StoredResponse = serde_json::from_str(&json).unwrap();
        assert!(again.is_replay());
        let r = again.into_response();
        assert_eq!(r.status(), StatusCode::CREATED);
        assert_eq!(r.headers()["location"], "/orders/1");
        assert_eq!(r.headers()["x-a"], "b");
        assert_eq!(r.headers()[IDEMPOTENT_REPLAYED], "true");
        let bin = StoredResponse::capture(vec![0xffu8, 0]).await.unwrap();
        let back: StoredResponse =
            serde_json::from_str(&serde_json::to_string(&bin).unwrap()).unwrap();
        assert_eq!(back.body, StoredBody::Bytes(vec![0xff, 0]));
        let big = vec![b'a'; DEFAULT_STORED_BODY_LIMIT + 1];
        assert!(matches!(
            StoredResponse::capture(big).await,
            Err(Error::Codec { .. })
        ));
    }
}
