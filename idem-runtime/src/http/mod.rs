//! HTTP: the `Idempotency-Key` tower layer and the axum handler adapters
//! (feature `axum`).
//!
//! Most duplicates arrive over HTTP — double clicks, gateway retries, clients
//! that time out and try again. [`IdempotencyLayer`] wraps any `tower` service
//! taking `http::Request`s (an axum route, a whole router, a hyper service) and
//! runs each keyed request through the non-macro guard
//! ([`Idem::guard`](crate::Idem::guard)): one protocol, one set of stores, the
//! same counters (`technique="http"`). The stored value is a
//! [`StoredResponse`] (status, chosen headers, body bytes) encoded like any
//! guarded result, so a replay works across processes and on every store.
//!
//! | request | answer |
//! |---|---|
//! | safe method (`GET`, `HEAD`, `OPTIONS`, `TRACE`) | passed through |
//! | no `Idempotency-Key`, route requires one | `400`, problem details |
//! | no key, key optional ([`IdempotencyLayer::optional`]) | passed through, not guarded |
//! | key empty, too long (> 255 bytes by default), with a control character or tab, not one RFC 8941 string or bare value, comma-joined, or the field repeated | `400`, problem details |
//! | body over the request limit (1 MiB by default) | `413`; the handler does not run, nothing is stored |
//! | first request with this key | the handler runs; its response is returned unchanged and kept by the [`Keeping`] rule |
//! | same key, same fingerprint, finished | the stored status, body and allow-listed headers ([`DEFAULT_REPLAYED`] and those added), plus `Idempotent-Replayed: true`; never `Set-Cookie`, `Date`, lengths or hop-by-hop headers |
//! | same key, different method, path or body | `422`, problem details; the handler does not run |
//! | same key, first request still running | waits for it and replays its response (default), or `409` with `Retry-After` (rounded up; [`IdempotencyLayer::reject_concurrent`] or the wait ran out) |
//! | handler answered `5xx`, `408`, `425`, `429`, or `401`/`403` (unless [`IdempotencyLayer::keep_auth_failures`]) | returned, not kept: the key is released and a retry runs the handler again |
//! | kept status, body over the store limit (256 KiB by default), failed while streaming, or with trailers | returned in full; the key ends as done with status and headers and the mark "body not kept": a repeat gets `409` problem details naming the first status, not a second run |
//! | store unavailable | `503`, problem details (fail closed) |
//! | with [`IdempotencyLayer::backstop`]: the handler's response carries an [`ErrorCause`] holding the constraint's unique violation (the store lost the first record) | [`IdempotencyLayer::on_conflict`]'s response (the existing result), stored for later repeats; without a lookup `409`, problem details; another cause: returned, the key released |
//!
//! Problem details never show the internal key (`namespace:scene:scope:key`)
//! or the fingerprints: at most the client's own key
//! ([`IdempotencyLayer::problem_raw_keys`] opts in for debugging). The same
//! rules hold for `#[idempotent]` on axum handlers (see [`Reply`]), whose
//! replays carry `Idempotent-Replayed: true` without an extra layer; see
//! `docs/http-responses.md` for the table of every response kind.
//!
//! The key is scoped by the layer's scene and, through
//! [`IdempotencyLayer::scope_by`], by the user or tenant the request belongs to:
//! two users sending the same key are two requests.
//!
//! ```
//! use axum::{Router, routing::post, http::StatusCode};
//! use idem::{Idem, MemoryStore, http::IdempotencyLayer};
//!
//! # fn main() -> Result<(), idem::Error> {
//! let idem = Idem::builder().store(MemoryStore::new()).namespace("shop").build()?;
//! let app: Router = Router::new().route(
//!     "/orders",
//!     post(|| async { (StatusCode::CREATED, "order 1") })
//!         .layer(IdempotencyLayer::new(idem.clone()).scene("orders")
//!             .scope_by(|req| req.headers.get("x-user-id")?.to_str().ok().map(str::to_owned))),
//! );
//! # Ok(()) }
//! ```
//!
//! Handlers annotated with `#[idempotent]` keep their axum return type; see
//! [`Reply`] for the types the attribute stores. [`IdempotencyKey`] is the
//! header as an extractor, with the layer's checks and answers.
//!
//! - `layer`: [`IdempotencyLayer`] and its settings;
//! - `backstop`: [`ErrorCause`] and the layer's `on_conflict` lookup;
//! - `service`: [`Idempotency`], the service the layer wraps around yours;
//! - `key_header`: reading and checking the `Idempotency-Key` header;
//! - `extract`: [`IdempotencyKey`], the header as an axum extractor;
//! - `keep`: [`Keeping`], which responses are kept and what of them;
//! - `body`: bounded buffering of request and response bodies;
//! - `stored`: [`StoredResponse`], what is stored and replayed;
//! - `problem`: problem-details answers, and `IntoResponse` for `idem::Error`;
//! - `reply`: [`Reply`] and [`MarkReplaysLayer`], for annotated handlers.

mod backstop;
mod body;
mod extract;
mod keep;
mod key_header;
mod layer;
mod problem;
mod reply;
mod service;
mod stored;

pub use backstop::ErrorCause;
pub use body::Unkept;
pub use extract::{IdempotencyKey, KeyRejection};
pub use keep::{DEFAULT_REPLAYED, Keeping, NEVER_REPLAYED, never_replayed};
pub use layer::{Fingerprinted, IdempotencyLayer};
pub use problem::{debug_problem, problem};
pub use reply::{MarkReplays, MarkReplaysLayer, Replied, Reply};
pub use service::Idempotency;
pub use stored::{DEFAULT_STORED_BODY_LIMIT, StoredResponse};

/// The request header carrying the client's idempotency key.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// The response header marking a replayed response.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// The header names as `HeaderName`s: a lookup or insert by `&str` parses
/// the name on every request.
static KEY_HEADER: http::HeaderName = http::HeaderName::from_static(IDEMPOTENCY_KEY);
static REPLAYED_HEADER: http::HeaderName = http::HeaderName::from_static(IDEMPOTENT_REPLAYED);

/// Marks `headers` as those of a replay (`Idempotent-Replayed: true`).
fn mark_replayed(headers: &mut http::HeaderMap) {
    headers.insert(
        REPLAYED_HEADER.clone(),
        http::HeaderValue::from_static("true"),
    );
}
