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
//! | key empty, too long (> 255 bytes by default), not visible ASCII, repeated | `400`, problem details |
//! | body over the request limit (1 MiB by default) | `413`; the handler does not run, nothing is stored |
//! | first request with this key | the handler runs; its response is stored and returned unchanged |
//! | same key, same fingerprint, finished | the stored status, body, `Content-Type`, `Location` and the configured headers, plus `Idempotent-Replayed: true` |
//! | same key, different method, path or body | `422`, problem details; the handler does not run |
//! | same key, first request still running | waits for it and replays its response (default), or `409` with `Retry-After` ([`IdempotencyLayer::reject_concurrent`] or the wait ran out) |
//! | handler answered `5xx` (by default; [`IdempotencyLayer::store_status`]) | returned, not stored: the key is released and a retry runs the handler again |
//! | response body over the store limit (256 KiB by default) | returned in full, not stored: the key is released and a retry runs the handler again |
//! | store unavailable | `503`, problem details (fail closed) |
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
//! [`Reply`] for the types the attribute stores, and [`MarkReplaysLayer`] for the
//! `Idempotent-Replayed` header on their replays.
//!
//! - `layer`: [`IdempotencyLayer`] and its settings;
//! - `service`: [`Idempotency`], the service the layer wraps around yours;
//! - `key_header`: reading and checking the `Idempotency-Key` header;
//! - `body`: bounded buffering of request and response bodies;
//! - `stored`: [`StoredResponse`], what is stored and replayed;
//! - `problem`: problem-details answers, and `IntoResponse` for `idem::Error`;
//! - `reply`: [`Reply`] and [`MarkReplaysLayer`], for annotated handlers.

mod body;
mod key_header;
mod layer;
mod problem;
mod reply;
mod service;
mod stored;

pub use layer::{Fingerprinted, IdempotencyLayer};
pub use problem::problem;
pub use reply::{MarkReplays, MarkReplaysLayer, Reply};
pub use service::Idempotency;
pub use stored::{DEFAULT_STORED_BODY_LIMIT, StoredResponse};

/// The request header carrying the client's idempotency key.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// The response header marking a replayed response.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";
