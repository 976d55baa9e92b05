//! The guard semantics (DESIGN §3, rules 1–9), written once and run on every store.
//!
//! `conformance/stores.rs` invokes `conformance_suite!(store = <async expr giving Arc<dyn Store>>, keys = N)`
//! and gets one `#[tokio::test]` per rule. Each test makes its own handle under a
//! fresh namespace, so shared servers need no cleanup between runs, and asserts
//! what happened: body executions, returned values, stored records, fences.

use std::sync::Arc;

use idem::Store;

use crate::support::{AppError, handle};

/// Generates one test per rule for the store built by `$make` (an expression
/// that may `.await`). `keys` sizes the many-keys concurrency test.
macro_rules! conformance_suite {
    (store = $make:expr, keys = $keys:expr) => {
        async fn __store() -> std::sync::Arc<dyn idem::Store> {
            $make
        }
        $crate::conformance::suite::conformance_suite!(@tests $keys;
            first_call_runs_and_stores, sequential_repeats_run_once, concurrent_wait_runs_once,
            concurrent_reject, fail_then_retry, waiter_takes_over_after_failure, payload_mismatch,
            lease_takeover_after_crash, stale_owner_has_no_effect, lost_reply_same_owner,
            cancel_before_body_releases, cancel_after_start_keeps_claim, fences_increase,
            unavailable_fails_closed, degraded_backstop_one_row, backstop_on_conflict_replays,
            backstop_without_lookup_is_duplicate, terminal_error_replayed, version_mismatch_is_codec,
            hostile_key_parts, breaker_stops_paying_timeouts, complete_failure_still_returns_ok,
            inspect_and_forget, max_hold_lets_hung_body_lapse, failed_claim_is_released,
            hung_claim_is_released, huge_durations_are_capped, census_counts_by_scene_and_state,
            purge_report_counts_then_deletes, complete_taken_holds_for_any_description
        );
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn many_keys_concurrent() {
            $crate::conformance::suite::many_keys_concurrent(__store().await, $keys).await
        }
    };
    (@tests $keys:expr; $($name:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            $crate::conformance::suite::$name(__store().await).await
        }
    )*};
}
pub(crate) use conformance_suite;

pub use crate::conformance::limits::{
    census_counts_by_scene_and_state, huge_durations_are_capped, purge_report_counts_then_deletes,
};

pub(crate) type Res<T> = Result<T, AppError>;

pub(crate) fn short(store: Arc<dyn Store>, p: &str) -> idem::Idem {
    handle(store, p)
}

pub use super::calls::*;
pub use super::failures::*;
pub use super::outages::*;
pub use super::owners::*;
pub use super::taken::*;
