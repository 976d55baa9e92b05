//! # idem — idempotent service operations
//!
//! A request executed once or a hundred times leaves the same business result.
//! See the README for the guide; this crate re-exports the macros and the runtime,
//! item by item, so what is public here is a decision, not an accident.

/// State machines (`#[derive(StateMachine)]`, `#[state_transition]`, `#[transitions]`).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use idem_macros::{StateMachine, consume_once, state_transition, transitions};
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
// The transactional guard (`Guard::in_tx`, `#[idempotent(tx = …)]`).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use idem_runtime::{InTx, TxBody, TxDb, TxGuard, txguard};
// The consume log: what a consumer returns, and the module
// (`idem::consume::consume_once`, `Message`, `LogTable`; broker loops under
// `idem::consume::amqp` and `idem::consume::nats`).
pub use idem_runtime::{Consumed, DuplicateOf, consume};
// Errors.
pub use idem_runtime::{Error, Result, std_error};
// Stores and monitoring figures.
pub use idem_runtime::{FaultPlan, FaultyStore, MemoryStore, Stats, Store, TopKey};

// The modules, for the less common names (`idem::store::redis::RedisStore`,
// `idem::observe::CallOutcome`, `idem::backstop::find_unique_violation`, ...).
/// The caller's SQL database: dialects, identifiers, conflict retries.
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use idem_runtime::db;
/// The `Idempotency-Key` tower layer and the axum handler adapters (feature `axum`).
#[cfg(feature = "axum")]
pub use idem_runtime::http;
/// The SQL stores, `ddl()` and the constraint catalog (`idem::sql::…`).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use idem_runtime::sql;
pub use idem_runtime::{
    backstop, error, fingerprint, guard, hooks, key, lock, observe, outcome, policy, state_cas,
    store, token,
};

#[doc(hidden)]
pub use idem_runtime::__private;
