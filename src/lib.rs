//! # idem — idempotent service operations
//!
//! A request executed once or a hundred times leaves the same business result.
//! See the README for the guide; this crate re-exports the macros and the runtime,
//! item by item, so what is public here is a decision, not an accident.

/// State machines (`#[derive(StateMachine)]`, `#[state_transition]`, `#[transitions]`).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use idem_macros::{StateMachine, state_transition, transitions};
pub use idem_macros::{distributed_lock, idempotent};

// The handle and the guarded call.
pub use idem_runtime::{Guard, Idem, IdemBuilder, global, install};
// The distributed lock.
pub use idem_runtime::{Lock, LockGrant, LockPolicy};
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
pub use idem_runtime::{StateMachine, Transition, state};
// Errors.
pub use idem_runtime::{Error, Result, std_error};
// Stores and monitoring figures.
pub use idem_runtime::{FaultPlan, FaultyStore, MemoryStore, Stats, Store, TopKey};

// The modules, for the less common names (`idem::store::redis::RedisStore`,
// `idem::observe::CallOutcome`, `idem::backstop::find_unique_violation`, ...).
/// The caller's SQL database: dialects, identifiers, conflict retries.
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use idem_runtime::db;
/// The SQL stores, `ddl()` and the constraint catalog (`idem::sql::…`).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use idem_runtime::sql;
pub use idem_runtime::{
    backstop, error, fingerprint, guard, hooks, key, lock, observe, outcome, policy, state_cas,
    store, token,
};

// The exact versions of the crates idem's API takes values of.
pub use idem_runtime::metrics;
#[cfg(feature = "redis")]
pub use idem_runtime::redis;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use idem_runtime::sqlx;

#[doc(hidden)]
pub use idem_runtime::__private;
