//! One integration-test binary (fewer links); each module covers one area.
#![allow(unreachable_pub)] // test-only modules share helpers with `pub`

mod support;

mod conformance;
mod conformance_limits;
mod guard_safety;
mod keys;
mod lock;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod lock_fenced;
mod memory;
mod observability;
#[cfg(feature = "redis")]
mod redis_cluster;
#[cfg(all(feature = "redis", feature = "sqlite"))]
mod redis_faults;
#[cfg(feature = "redis")]
mod redis_native;
#[cfg(feature = "redis")]
mod redis_procs;
#[cfg(feature = "redis")]
mod redis_store;
mod sim;
mod state_cas;
mod token;
mod unanswered_claims;

mod macro_backstop;
mod macro_basic;
mod macro_concurrency;
mod macro_fence;
mod macro_report;
mod macro_support;
// The SQL suites run against all three databases at once.
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_backstop;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_conformance;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_layered;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_procs;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_round_trips;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_store;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_support;
mod sql_token;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod state_machine;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod state_support;
