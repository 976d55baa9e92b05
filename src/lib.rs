//! # idem — idempotent service operations
//!
//! A request executed once or a hundred times leaves the same business result:
//! a double click, a gateway retry, a payment callback delivered five times, a
//! message redelivered after a crash. The first call runs; every duplicate gets
//! the first call's result back; a database unique constraint stands behind the
//! fast store as the final backstop. This page is the map; the repository's
//! `docs/` directory has one page per technique, and each module page here
//! documents its part of the API.
//!
//! ## Which technique, which macro or type
//!
//! | technique | reach for | module |
//! |---|---|---|
//! | a guarded function: runs once per key, duplicates get its result | [`#[idempotent]`](idempotent) | [`guard`] |
//! | the same without the macro (dynamic keys, frameworks) | [`Idem::guard`], [`Outcome`], [`reported`] | [`guard`] |
//! | unique-index backstop, degraded mode during a store outage | `backstop`, `on_conflict`, `degrade` options; [`Hooks`] | [`backstop`] |
//! | transactional guard: the record commits with your rows | `#[idempotent(tx = …)]`, [`Guard::in_tx`] | [`txguard`] |
//! | optimistic lock, pessimistic lock, insert-once | [`db::optimistic`], [`db::pessimistic`], [`db::insert_once`] | [`db`] |
//! | state machine on a SQL row | [`#[derive(StateMachine)]`](derive@StateMachine), [`#[state_transition]`](state_transition), [`#[transitions]`](transitions) | [`state`] |
//! | distributed lock with fencing | [`#[distributed_lock]`](distributed_lock), [`Idem::lock`] | [`lock`] |
//! | one-time tokens | [`Idem::tokens`], `#[idempotent(token = …)]` | [`token`] |
//! | Redis state check-and-set | [`Idem::state_cas`] | [`state_cas`] |
//! | at-least-once message consumers | [`#[consume_once]`](consume_once), [`Consumed`] | [`consume`] |
//! | HTTP `Idempotency-Key` (axum, tower) | [`http::IdempotencyLayer`], `#[idempotent]` on handlers | [`http`] |
//! | transactional outbox: messages commit with your rows, a relay publishes | [`outbox::Outbox::enqueue`], [`outbox::Relay`] | [`outbox`] |
//!
//! Around them: [`Idem`] and [`IdemBuilder`] (the handle; [`Idem::verify`] at
//! start-up), [`store`] ([`MemoryStore`], `RedisStore`, `SqlStore`, and
//! [`FaultyStore`] for tests),
//! [`settings`] (durations from configuration), [`policy`] ([`Policy`] and
//! [`LockPolicy`], the per-call settings), [`observe`] (the span, metric
//! names, [`Stats`]), [`key`] and [`fingerprint`] (how keys and payloads are
//! rendered), [`hooks`] and [`outcome`], and [`Error`] (what can go wrong, each
//! naming its key). `sql` is the SQL stores' module (`idem::sql::ddl`).
//! Items behind a feature carry its badge.
//!
//! ## One attribute
//!
//! ```
//! use idem::{Idem, MemoryStore};
//!
//! #[derive(Debug)]
//! enum AppError {
//!     Idem(idem::Error),
//! }
//! impl From<idem::Error> for AppError {
//!     fn from(e: idem::Error) -> Self {
//!         AppError::Idem(e)
//!     }
//! }
//!
//! #[idem::idempotent(key = "order-create:<user_id>:<req_id>", ttl = "24h", handle = idem)]
//! async fn create_order(idem: &Idem, user_id: u64, req_id: &str) -> Result<u64, AppError> {
//!     Ok(user_id * 1000) // the business: runs once per (user_id, req_id)
//! }
//!
//! # fn main() -> Result<(), AppError> {
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! # rt.block_on(async {
//! let idem = Idem::builder().store(MemoryStore::new()).namespace("shop").build()?;
//! let first = create_order(&idem, 7, "req-1").await?;
//! let again = create_order(&idem, 7, "req-1").await?; // replayed, the body did not run
//! assert_eq!(first, again);
//! # Ok(()) })
//! # }
//! ```
//!
//! Pass the handle with `handle = …` (an `&Idem` from your application state),
//! or [`install`] one global handle at start-up and leave `handle` out. Without
//! the macro, [`Idem::guard`] is the same machinery for dynamic keys and
//! frameworks (see [`guard`]).
//!
//! ## Choosing features
//!
//! | feature | what it brings | builds |
//! |---|---|---|
//! | `sqlite` (default) | SQLite record store, catalog, state machines, transactional guard | bundled SQLite (C) |
//! | `postgres` | PostgreSQL store, catalog, state machines, transactional guard | pure Rust |
//! | `mysql` | MySQL/MariaDB store, catalog, state machines, transactional guard | pure Rust |
//! | `redis` | Redis and Redis Cluster stores | pure Rust |
//! | `redis-tls` | `rediss://` through rustls with ring | ring (small C/asm) |
//! | `axum` | the `Idempotency-Key` layer, the attribute on axum handlers | pure Rust |
//! | `rabbitmq`, `nats` | the consume log's broker loops, the outbox relay's publishers | pure Rust, ring |
//! | `bench` | internal hooks of the overhead benchmark (not API) | nothing more |
//!
//! The default runs the quickstart on an embedded database with no server. A
//! service picks its stores and nothing else:
//! `idem = { version = "0.1", default-features = false, features = ["redis", "postgres"] }`
//! builds no SQLite. The in-memory and fault-injecting stores are always there.
//!
//! ## Versions idem's API takes values of
//!
//! `idem::sqlx` (0.9, with a SQL feature), `idem::redis` (1.8, feature `redis`)
//! and [`metrics`] 0.24 are re-exported: build the pools, clients and
//! recorders you hand to idem with these paths (or the same versions). Backstop
//! detection does not depend on your sqlx version: it reads the database's
//! message and SQLSTATE when the error is of another version's type
//! ([`backstop`]). A `metrics` recorder of another major version sees nothing
//! ([`observe`]).

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The macros. A doc comment here would be prepended to each macro's own docs
// (it once put "State machines…" at the top of `consume_once`'s).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite")))
)]
pub use idem_macros::{StateMachine, consume_once, state_transition, transitions};
pub use idem_macros::{distributed_lock, idempotent};

// The handle and the guarded call.
pub use idem_runtime::{Guard, Idem, IdemBuilder, global, install};
// The distributed lock.
pub use idem_runtime::{Lock, LockGrant, LockLease, LockPolicy};
// One-time tokens.
pub use idem_runtime::{Consume, Token, Tokens};
// The state check-and-set.
pub use idem_runtime::{StateCas, StateKey};
// What a call returns, and how it went.
pub use idem_runtime::{CallReport, Fence, How, Outcome, reported};
// Settings, hooks and keys.
pub use idem_runtime::{Concurrency, Hooks, Key, KeyPart, NoConflict, Policy, Terminal};
// State machines: the trait, what a transition returns, and the module
// (`idem::state::transition`, `StateConn`, `Columns`).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite")))
)]
pub use idem_runtime::{StateMachine, Transition, state};
// The transactional guard (`Guard::in_tx`, `#[idempotent(tx = …)]`).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite")))
)]
pub use idem_runtime::{InTx, TxBody, TxDb, TxGuard, txguard};
// The consume log: what a consumer returns, and the module
// (`idem::consume::consume_once`, `Message`, `LogTable`; broker loops under
// `idem::consume::amqp` and `idem::consume::nats`).
pub use idem_runtime::{Consumed, DuplicateOf, consume};
// The transactional outbox: `idem::outbox::Outbox::enqueue` in the business
// transaction, and its relay (`idem::outbox::Relay`, publishers under
// `idem::outbox::amqp` and `idem::outbox::nats`).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite")))
)]
pub use idem_runtime::outbox;
// Errors.
/// What the macros require of your types; compile errors name these traits.
pub use idem_runtime::bounds;
pub use idem_runtime::{Error, Result, std_error};
// Stores and monitoring figures.
pub use idem_runtime::{FaultPlan, FaultyStore, MemoryStore, Stats, Store, TopKey};
// The Redis store (its builder, the cluster store: `idem::store::redis`).
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use idem_runtime::store::redis::RedisStore;
// The SQL store (its builder, `ddl()`, the catalog: `idem::sql`).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite")))
)]
pub use idem_runtime::sql::SqlStore;

// The modules, for the less common names (`idem::store::redis::RedisClusterStore`,
// `idem::observe::CallOutcome`, `idem::backstop::find_unique_violation`, ...).
// The caller's SQL database: dialects, identifiers, conflict retries.
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite")))
)]
pub use idem_runtime::db;
// The `Idempotency-Key` tower layer and the axum handler adapters.
#[cfg(feature = "axum")]
#[cfg_attr(docsrs, doc(cfg(feature = "axum")))]
pub use idem_runtime::http;
// The SQL stores, `ddl()` and the constraint catalog (`idem::sql::…`).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite")))
)]
pub use idem_runtime::sql;
pub use idem_runtime::{
    backstop, error, fingerprint, guard, hooks, key, lock, observe, outcome, policy, settings,
    state_cas, store, token,
};

// The exact versions of the crates idem's API takes values of. Listed as
// re-exports (`no_inline`): inlined, all of redis-rs, sqlx and metrics would
// fill idem's docs and search index.
#[doc(no_inline)]
pub use idem_runtime::metrics;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
#[doc(no_inline)]
pub use idem_runtime::redis;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite")))
)]
#[doc(no_inline)]
pub use idem_runtime::sqlx;

/// `__private::run!` under a name without `__private`, which rustc repeats in
/// messages about an `#[idempotent]` function ("this error originates in the
/// macro …").
#[doc(hidden)]
pub use idem_runtime::__idem_run;
#[doc(hidden)]
pub use idem_runtime::__private;

#[cfg(test)]
mod public_api_tests;

// Every Rust snippet of the `docs/` pages compiles (and, where it needs no
// server, runs): each page is a doctest here, under the features its snippets
// use. A page without Rust snippets is left out.
#[cfg(doctest)]
mod docs_pages {
    #[cfg_attr(feature = "postgres", doc = include_str!("../docs/backstop.md"))]
    struct Backstop;
    #[cfg_attr(all(feature = "postgres", feature = "rabbitmq"), doc = include_str!("../docs/consume.md"))]
    struct Consume;
    #[doc = include_str!("../docs/guard.md")]
    struct Guard;
    #[cfg_attr(feature = "axum", doc = include_str!("../docs/http.md"))]
    struct Http;
    #[cfg_attr(feature = "postgres", doc = include_str!("../docs/lock.md"))]
    struct Lock;
    #[cfg_attr(feature = "postgres", doc = include_str!("../docs/macro.md"))]
    struct Macro;
    #[cfg_attr(all(feature = "postgres", feature = "rabbitmq"), doc = include_str!("../docs/outbox.md"))]
    struct Outbox;
    #[cfg_attr(feature = "redis", doc = include_str!("../docs/redis.md"))]
    struct Redis;
    #[doc = include_str!("../docs/settings.md")]
    struct Settings;
    #[doc = include_str!("../docs/state-cas.md")]
    struct StateCas;
    #[cfg_attr(feature = "postgres", doc = include_str!("../docs/state-machine.md"))]
    struct StateMachine;
    #[doc = include_str!("../docs/token.md")]
    struct Token;
    #[cfg_attr(feature = "otel", doc = include_str!("../docs/tracing.md"))]
    struct Tracing;
    #[cfg_attr(feature = "postgres", doc = include_str!("../docs/transactional.md"))]
    struct Transactional;
}
