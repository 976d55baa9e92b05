//! [`IdempotencyKey`]: the `Idempotency-Key` header as an axum extractor, with
//! exactly the layer's checks and the layer's `400` problem answers (in the
//! spirit of axum-extra's `TypedHeader`).

use std::fmt;

use axum::extract::{FromRequestParts, OptionalFromRequestParts};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use http::request::Parts;

use super::key_header::{self, BadKey, DEFAULT_MAX_KEY_LEN};
use super::problem::problem;
use crate::key::{KeyPart, PartWriter};

/// The client's `Idempotency-Key`, checked as the layer checks it: exactly one
/// field; an RFC 8941 string (`"…"`) or a bare value, which are one key; 1 to
/// 255 bytes once unquoted; no control characters or tabs; no comma-joined
/// list. A request that fails is answered `400` problem details
/// ([`KeyRejection`]) and the handler does not run. Behind an
/// [`IdempotencyLayer`](super::IdempotencyLayer) the extractor reads the key
/// the layer checked (with the layer's `max_key_len`).
///
/// It is a key part, so it goes straight into an `#[idempotent]` key;
/// `Option<IdempotencyKey>` makes the header optional (a malformed one is
/// still a `400`).
///
/// ```
/// use axum::{Json, Router, routing::post};
/// use idem::http::IdempotencyKey;
///
/// # #[derive(Debug)] struct AppError;
/// # impl From<idem::Error> for AppError { fn from(_: idem::Error) -> Self { AppError } }
/// # impl axum::response::IntoResponse for AppError {
/// #     fn into_response(self) -> axum::response::Response { axum::http::StatusCode::CONFLICT.into_response() }
/// # }
/// #[idem::idempotent(key = "order-create:<key>")]
/// async fn create_order(key: IdempotencyKey) -> Result<Json<String>, AppError> {
///     Ok(Json(format!("order for {key}")))
/// }
/// let app: Router = Router::new().route("/orders", post(create_order));
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// A key the layer already checked.
    pub(super) fn checked(key: String) -> Self {
        IdempotencyKey(key)
    }

    /// Reads and checks the key from request headers (at most `max_len` bytes).
    pub fn from_headers(headers: &http::HeaderMap, max_len: usize) -> Result<Self, KeyRejection> {
        key_header::read(headers, max_len)
            .map(IdempotencyKey)
            .map_err(KeyRejection)
    }

    /// The key, unquoted.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key, unquoted.
    pub fn into_inner(self) -> String {
        self.0
    }
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("IdempotencyKey").field(&self.0).finish()
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for IdempotencyKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl KeyPart for IdempotencyKey {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        out.write_str(&self.0)
    }
}

/// Why a request's `Idempotency-Key` was refused: answered `400` problem
/// details, as the layer answers.
#[derive(Debug, PartialEq, Eq)]
pub struct KeyRejection(BadKey);

impl KeyRejection {
    /// True when the header was absent (rather than malformed).
    pub fn is_missing(&self) -> bool {
        self.0 == BadKey::Missing
    }
}

impl fmt::Display for KeyRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            BadKey::Missing => f.write_str(MISSING),
            BadKey::Malformed(detail) => f.write_str(detail),
        }
    }
}

impl std::error::Error for KeyRejection {}

const MISSING: &str = "this endpoint requires an `Idempotency-Key` header";

/// The layer's and the extractor's answer to a refused key.
pub(super) fn rejection(bad: BadKey) -> Response {
    match bad {
        BadKey::Missing => problem(StatusCode::BAD_REQUEST, "missing idempotency key", MISSING),
        BadKey::Malformed(detail) => problem(
            StatusCode::BAD_REQUEST,
            "malformed idempotency key",
            &detail,
        ),
    }
}

impl IntoResponse for KeyRejection {
    fn into_response(self) -> Response {
        rejection(self.0)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = KeyRejection;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, KeyRejection> {
        if let Some(key) = parts.extensions.get::<IdempotencyKey>() {
            return Ok(key.clone());
        }
        Self::from_headers(&parts.headers, DEFAULT_MAX_KEY_LEN)
    }
}

impl<S: Send + Sync> OptionalFromRequestParts<S> for IdempotencyKey {
    type Rejection = KeyRejection;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &S,
    ) -> Result<Option<Self>, KeyRejection> {
        match <Self as FromRequestParts<S>>::from_request_parts(parts, state).await {
            Ok(key) => Ok(Some(key)),
            Err(r) if r.is_missing() => Ok(None),
            Err(r) => Err(r),
        }
    }
}
