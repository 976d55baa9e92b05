//! The runtime behind `idem`: the guard protocol, the record stores and the
//! techniques the macros call. Users depend on the `idem` facade crate, which
//! re-exports everything here; see its documentation for the guide.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(test)]
mod arch_tests;
pub mod backstop;
pub mod bounds;
pub mod consume;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite")))
)]
pub mod db;
pub mod error;
pub(crate) mod exec;
mod fence;
pub mod fingerprint;
pub mod guard;
mod handle;
pub mod hooks;
#[cfg(feature = "axum")]
pub mod http;
pub mod key;
pub mod lock;
pub mod observe;
#[cfg(feature = "sql")]
#[cfg_attr(docsrs, doc(cfg(feature = "sql")))]
pub mod outbox;
pub mod outcome;
pub mod policy;
pub(crate) mod record;
mod reply;
mod scene;
pub mod settings;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub(crate) mod sql_kernel;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite")))
)]
pub mod state;
pub mod state_cas;
pub mod store;
pub mod token;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod txguard;

#[doc(hidden)]
#[path = "private/mod.rs"]
pub mod __private;

pub use backstop::std_error;
pub use consume::{Consumed, DuplicateOf};
pub use error::{Error, Result};
pub use fence::Fence;
pub use guard::Guard;
pub use handle::{Idem, IdemBuilder, global, install};
pub use hooks::{Hooks, NoConflict, Terminal};
pub use key::{Key, KeyPart};
pub use lock::{Lock, LockGrant, LockLease};
/// The `metrics` crate idem records to (0.24): install a recorder of this major
/// version, or idem's counters go nowhere (a recorder of another version sees
/// nothing and nothing can tell).
#[doc(no_inline)]
pub use metrics;
pub use observe::{CallReport, Stats, TopKey, reported};
pub use outcome::{How, Outcome};
pub use policy::{Concurrency, LockPolicy, Policy};
/// The `redis` crate idem's Redis stores are built on (1.8): build a
/// `redis::Client` or `ConnectionManager` for `RedisStore::from_client` with it.
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
#[doc(no_inline)]
pub use redis;
/// The `sqlx` crate idem's SQL stores and helpers are built on (0.9): the pools
/// given to `SqlStore`, `SqlConstraints` and the technique helpers are of this
/// version. Backstop detection does not depend on it (it reads error text too).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite")))
)]
#[doc(no_inline)]
pub use sqlx;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite")))
)]
pub use state::{StateMachine, Transition};
pub use state_cas::{StateCas, StateKey};
pub use store::Store;
pub use store::faulty::{FaultPlan, FaultyStore};
pub use store::memory::MemoryStore;
/// The SQL stores, `ddl()` and the constraint catalog (`idem::sql::…`): the
/// SQL store's module, with the business database's constraint catalog and the
/// operators' reads of the outbox and the consume log beside it.
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite")))
)]
pub mod sql {
    pub use crate::backstop::{EXPRESSION, SqlConstraints};
    pub use crate::consume::ConsumerRows;
    pub use crate::outbox::{
        DEFAULT_OUTBOX_TABLE, OutboxState, OutboxTopic, ParkedMessage, Unpark, check_outbox_table,
    };
    pub use crate::store::sql::*;
}
pub use token::{Consume, Token, Tokens};
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use txguard::{InTx, TxBody, TxDb, TxGuard};
