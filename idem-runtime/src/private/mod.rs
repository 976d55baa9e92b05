//! The only surface generated code touches. Not public API: names here may change
//! in any release, and the macros are updated with them.
//!
//! An `#[idempotent]` function expands to a static [`Spec`], a [`KeyBuf`] chain
//! rendering the key from the parameters, and one [`Guarded`] call that hands the
//! body to the same engine as the non-macro builder. One file per concern; the
//! macros of later issues add theirs beside `idempotent.rs`.
//!
//! - `spec`: [`Spec`], the static description of a function;
//! - `key`: [`KeyBuf`], the key chain;
//! - `fence`: [`FenceCell`], the body's `idem::Fence` parameter;
//! - `idempotent`: [`Guarded`] and [`run`];
//! - `lock`: [`LockSpec`], [`Locked`] and `lock` (`#[distributed_lock]`);
//! - `reply`: [`Http`] and [`Reply`], axum responses as an `#[idempotent]` result;
//! - `crate::bounds` (public, re-exported here): the traits checked once at
//!   the user's return type;
//! - `detect`: backstop detection by autoref specialisation;
//! - `diag`: messages of compile-time (`const`) checks, e.g. an unknown stored state;
//! - `state`: `#[state_transition]` and `#[derive(StateMachine)]`;
//! - `tx`: [`run_in_tx`], `#[idempotent(tx = …)]` (the transactional guard);
//! - `consume`: `#[consume_once]`;
//! - `lent`: [`Lent`], the connection a state or consume body gets back;
//! - `site`: the preamble of every store-backed entry (handle, scene, policy).

// The bounds are public (`idem::bounds`), so messages name them by that path;
// `super::bounds::..` in the files below still resolves through this import.
use crate::bounds;
/// `#[consume_once]`.
#[cfg(feature = "sql")]
pub mod consume;
mod detect;
mod diag;
mod fence;
mod idempotent;
mod key;
#[cfg(feature = "sql")]
mod lent;
mod lock;
mod reply;
mod site;
mod spec;
/// `#[state_transition]` and `#[derive(StateMachine)]`.
#[cfg(feature = "sql")]
pub mod state;
#[cfg(feature = "sql")]
mod tx;

/// Link-time registration of `#[idempotent(backstop = "…")]` (issue 24 n):
/// the expansion submits one [`BackstopDecl`] through this crate's macro.
pub use ::inventory;

pub use crate::__declare_backstop as declare_backstop;
pub use crate::backstop::declared::Declared as BackstopDecl;
pub use crate::fingerprint::FingerprintBuilder;
pub use crate::hooks::{DetectFn, Hooks, NoConflict, OnConflict, Terminal};
pub use crate::policy::Concurrency;

pub use crate::bounds::{
    IdemErrorInto, IdempotentResult, IsResult, Returns, Storable, TerminalError,
};
pub use detect::{ErrProbe, ViaAsRef, ViaNothing, ViaStdError, detect};
pub use diag::{ConstMsg, unknown_stored};
pub use fence::FenceCell;
pub use idempotent::{Guarded, run};
pub use key::KeyBuf;
#[cfg(feature = "sql")]
pub use lent::Lent;
pub use lock::{LockReturns, LockSpec, Locked, lock};
pub use reply::{Http, Replied, Reply, Unkept, finish, finish_marked, reported, stored};
pub use spec::Spec;
#[cfg(feature = "sql")]
pub use tx::run_in_tx;
