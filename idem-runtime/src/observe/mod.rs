//! Observability: what every guarded call reports, under fixed names.
//!
//! Every technique wraps its operation in one `instrument` call, which opens the
//! `idem` span, records the outcome on it and counts the call, both through the
//! `metrics` facade (export with any recorder, e.g. Prometheus) and in process, so
//! [`Idem::stats`](crate::Idem::stats) answers without a metrics backend. The
//! store-op wrapper times every store call. Labels are typed ([`CallOutcome`],
//! [`Technique`], [`Op`]): a misspelt one does not compile.
//!
//! | name | kind | labels / fields |
//! |---|---|---|
//! | `idem` | span (DEBUG), one per guarded call | `technique`, `scope`, `key` (its hash), `outcome`, `fence` |
//! | `idem_calls_total` | counter | `technique`, `scope`, `outcome` |
//! | `idem_store_seconds` | histogram | `store`, `op` |
//! | `idem_store_errors_total` | counter | `store`, `op` |
//! | `idem_backstop_hits_total` | counter | `technique`, `scope`, `path` |
//! | `idem_store_queue_seconds` | histogram: waits for a turn in a store's send queue (bursts) | `store`, `op` |
//! | `idem_store_overloaded_total` | counter: operations with no turn within the caller's budget | `store`, `op` |
//! | `idem_store_unreplicated_total` | counter: results kept although fewer replicas than the store's durability asks for acknowledged them | `store`, `op` (`complete`) |
//! | `idem_consume_deliveries_total` | counter | `consumer`, `event` (`redelivered`, `retried`, `poison`) |
//!
//! - `technique`: `idempotent`, `state_machine`, `lock`, `token`, `consume`, `http`,
//!   `state_cas`, `tx_guard`, `optimistic`, `pessimistic`, `insert_once`.
//! - `outcome`: `executed`, `replayed`, `waited`, `in_progress`, `mismatch`,
//!   `backstop`, `degraded`, `failed`, `released`, `not_stored`; for the other
//!   techniques `applied`, `already_applied`, `invalid_transition`, `lock_busy`,
//!   `token_invalid`, `duplicate_message`, `conflict`, `precondition_failed`;
//!   `unguarded` for every call of a disabled handle (`IdemBuilder::disabled`).
//! - `op`: `claim`, `renew`, `complete`, `release`, `inspect`, `forget`, `purge`,
//!   `verify`; one-time tokens: `token_issue`, `token_take`, `token_return`;
//!   state check-and-set: `state_cas`.
//!
//! - `path`: `guarded` (the store granted a claim, the constraint caught a
//!   duplicate whose record was lost: these calls are `outcome="backstop"`) or
//!   `degraded` (the store was down, the body ran under `degrade = "backstop"`
//!   and hit the constraint: these calls are `outcome="degraded"`).
//!
//! Every call is counted once in `idem_calls_total`. `degraded` counts every call
//! whose body ran without the store, whatever the body did; a degraded call that
//! hit the constraint is also a backstop hit (see `verdict`). Backstop hits =
//! `sum(idem_backstop_hits_total)` = `outcome="backstop"` + degraded hits;
//! interception rate = (replayed + waited + backstop hits + duplicate_message) /
//! calls. The most-repeated keys of each
//! scope are kept by a Space-Saving top-K: bounded memory, and any key repeated
//! more than `calls / capacity` times is guaranteed to be listed;
//! [`render_top_keys`] exports the keys certainly repeated, by guaranteed
//! count and hashed key (`idem_top_key_repeats{scope,key}`).
//!
//! The span is at DEBUG: a span per call is too much for a default INFO log, and
//! the service's request span already says a request happened (`RUST_LOG=idem=debug`
//! shows how each call went). Its `key` is [`key_hash`] of the key, as in every
//! idem log line: keys are request data (ids, emails, tokens). A handle built
//! with `IdemBuilder::log_raw_keys(true)` records raw keys in its spans instead.
//!
//! Metric descriptions and units are registered when a handle is built (install
//! the recorder first). `idem_store_seconds` is a histogram: see
//! [`STORE_SECONDS_BUCKETS`] for the buckets and an exporter setup. idem records
//! through `metrics` 0.24 (`idem::metrics`): a recorder built on another major
//! version of `metrics` is a different global and sees nothing, and no check can
//! tell from here. [`Idem::stats`](crate::Idem::stats) works without any recorder.
//!
//! - `labels`: the typed label values ([`Technique`], [`CallOutcome`], [`Op`]);
//! - `describe`: metric descriptions, units, recommended buckets;
//! - `redact`: [`key_hash`], the key as logs show it;
//! - `instrument`: the span + counters wrapper;
//! - `recorder`: per-handle counters and `idem_calls_total` with cached keys;
//! - `store_ops`: `idem_store_seconds` / `idem_store_errors_total` and the send
//!   queue's `idem_store_queue_seconds` / `idem_store_overloaded_total`, and
//!   `idem_store_unreplicated_total`, with cached keys;
//! - `report`: [`reported`], how one call went, for its caller (`CallReport`);
//! - `deliveries`: the broker loops' delivery events ([`DeliveryEvent`]);
//! - `stats`: [`Stats`] and [`TopKey`], the in-process snapshot;
//! - `topk`: the Space-Saving summary;
//! - `export`: [`render_top_keys`], the top-K as a Prometheus gauge (guaranteed
//!   counts, hashed keys);
//! - `verdict`: an outcome plus whether the constraint caught a duplicate;
//! - `trace`: [`TraceContext`], the W3C trace context messages carry;
//! - `messaging`, `otel` (feature `otel`): the `create`/`send`/`process`
//!   spans, OpenTelemetry attributes and links.

mod deliveries;
mod describe;
mod export;
mod fallback;
pub(crate) mod instrument;
pub(crate) mod labels;
pub(crate) mod messaging;
#[cfg(feature = "otel")]
mod otel;
mod recorder;
mod redact;
mod report;
#[cfg(feature = "sql")]
mod sql;
mod stats;
mod store_ops;
#[cfg(test)]
mod testing;
mod topk;
mod trace;
mod verdict;

pub use deliveries::{DeliveryEvent, count_delivery};
pub use describe::STORE_SECONDS_BUCKETS;
pub(crate) use describe::describe;
pub use export::{TOP_KEYS_METRIC, render_top_keys};
pub(crate) use fallback::{counted_under, install_fallback};
pub(crate) use instrument::instrument;
pub use labels::{CallOutcome, Op, Technique};
pub(crate) use recorder::Recorder;
pub use redact::{KeyHash, key_hash};
pub use report::{CallReport, reported};
#[cfg(feature = "sql")]
pub(crate) use sql::Observer;
pub use stats::{Stats, TopKey};
pub(crate) use store_ops::StoreOpKeys;
pub use trace::{TRACEPARENT, TRACESTATE, TraceContext};
pub(crate) use verdict::Verdict;

/// Metadata of every metric registration: the target is this module.
static METADATA: metrics::Metadata<'static> =
    metrics::Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()));
