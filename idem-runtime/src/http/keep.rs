//! [`Keeping`]: the one rule for which responses are kept (stored and
//! replayed) and what of them, shared by the layer, by
//! [`StoredResponse::capture`](super::StoredResponse::capture) and by
//! `#[idempotent]` on axum handlers.
//!
//! - Statuses: see [`Keeping::keeps`](Keeping::keeps) (2xx–4xx kept;
//!   5xx, 408, 425, 429 and by default 401/403 released).
//! - Headers: never `Set-Cookie`, hop-by-hop headers, `Date`, `Content-Length`
//!   or `Transfer-Encoding` (they belong to one connection, one moment or one
//!   client); of the others, only the allow-list, which users extend.
//! - Body: kept up to a limit; a kept status whose body is longer, fails while
//!   streaming or carries trailers still ends the key, stored as "body not kept".

use http::{HeaderName, StatusCode, header};

use super::stored::DEFAULT_STORED_BODY_LIMIT;

/// Response headers never stored nor replayed, whatever the allow-list says:
/// a cookie is one client's session, hop-by-hop headers are one connection's
/// (RFC 9110 §7.6.1), `Date` is the first response's moment, and the lengths
/// are recomputed for the replayed body.
pub const NEVER_REPLAYED: [HeaderName; 12] = [
    header::SET_COOKIE,
    HeaderName::from_static("set-cookie2"),
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::DATE,
];

/// The response headers replayed by default: what describes the result itself.
pub const DEFAULT_REPLAYED: [HeaderName; 12] = [
    header::CONTENT_TYPE,
    header::CONTENT_ENCODING,
    header::CONTENT_LANGUAGE,
    header::CONTENT_LOCATION,
    header::CONTENT_DISPOSITION,
    header::LOCATION,
    header::ETAG,
    header::LAST_MODIFIED,
    header::CACHE_CONTROL,
    header::EXPIRES,
    header::VARY,
    header::LINK,
];

/// True for a header that is never stored nor replayed ([`NEVER_REPLAYED`],
/// and `Content-Length`).
pub fn never_replayed(name: &HeaderName) -> bool {
    *name == header::CONTENT_LENGTH || NEVER_REPLAYED.contains(name)
}

/// Which responses are kept and what of them: statuses, headers, body size.
///
/// ```
/// use axum::http::{HeaderName, StatusCode};
/// use idem::http::Keeping;
///
/// let keep = Keeping::new().header(HeaderName::from_static("x-order-id"));
/// assert!(keep.keeps(StatusCode::CREATED) && keep.keeps(StatusCode::CONFLICT));
/// assert!(!keep.keeps(StatusCode::TOO_MANY_REQUESTS) && !keep.keeps(StatusCode::UNAUTHORIZED));
/// assert!(Keeping::new().keep_auth_failures(true).keeps(StatusCode::FORBIDDEN));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct Keeping {
    pub(super) headers: Vec<HeaderName>,
    pub(super) body_limit: usize,
    pub(super) auth_failures: bool,
}

impl Default for Keeping {
    fn default() -> Self {
        Keeping {
            headers: DEFAULT_REPLAYED.to_vec(),
            body_limit: DEFAULT_STORED_BODY_LIMIT,
            auth_failures: false,
        }
    }
}

impl Keeping {
    /// The defaults: [`DEFAULT_REPLAYED`] headers, bodies up to 256 KiB,
    /// `401`/`403` not kept.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also stores and replays this header (ignored for [`NEVER_REPLAYED`] ones).
    pub fn header(mut self, name: HeaderName) -> Self {
        if !self.headers.contains(&name) {
            self.headers.push(name);
        }
        self
    }

    /// The largest body stored (default 256 KiB). A kept response with a
    /// longer body still ends the key: it is stored as "body not kept".
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Keep `401` and `403` too (default: released, so a client that
    /// authenticates and retries with the same key is served).
    pub fn keep_auth_failures(mut self, keep: bool) -> Self {
        self.auth_failures = keep;
        self
    }

    /// True when a response with this status is kept.
    pub fn keeps(&self, status: StatusCode) -> bool {
        crate::reply::keeps_status(status.as_u16(), self.auth_failures)
    }

    /// True when this header is stored and replayed.
    pub fn stores_header(&self, name: &HeaderName) -> bool {
        !never_replayed(name) && self.headers.contains(name)
    }
}
