//! The runtime behind `idem`: the guard protocol, the record stores and the
//! techniques the macros call. Users depend on the `idem` facade crate, which
//! re-exports everything here; see its documentation for the guide.

pub mod backstop;
pub mod consume;
#[cfg(feature = "sql")]
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
pub mod outcome;
pub mod policy;
pub(crate) mod record;
mod reply;
mod scene;
#[cfg(feature = "sql")]
pub mod state;
pub mod state_cas;
pub mod store;
pub mod token;
#[cfg(feature = "sql")]
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
pub use lock::{Lock, LockGrant, LockPolicy};
pub use observe::{CallReport, Stats, TopKey, reported};
pub use outcome::{How, Outcome};
pub use policy::{Concurrency, Policy};
#[cfg(feature = "sql")]
pub use state::{StateMachine, Transition};
pub use state_cas::{StateCas, StateKey};
pub use store::Store;
pub use store::faulty::{FaultPlan, FaultyStore};
pub use store::memory::MemoryStore;
/// The SQL stores, `ddl()` and the constraint catalog (`idem::sql::…`).
#[cfg(feature = "sql")]
pub use store::sql;
pub use token::{Consume, Token, Tokens};
#[cfg(feature = "sql")]
pub use txguard::{InTx, TxBody, TxDb, TxGuard};
