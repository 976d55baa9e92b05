//! The caller's SQL database: its connection and transaction as idem's SQL
//! techniques see them, and the in-transaction helpers.
//!
//! - `conn`: the caller's connection, whatever holds it ([`SqlConn`]), and
//!   its database ([`SqlDb`], also named [`TxDb`]): the one way every
//!   caller-transaction technique reaches the connection;
//! - `in_tx`: the caller's transaction as a body run inside it sees it
//!   ([`InTx`], [`TxBody`]);
//! - `caller_tx`: the one map from a `sqlx::Error` in the caller's
//!   transaction to idem's error;
//! - `savepoint`: the savepoint a technique takes in the caller's transaction,
//!   so its own statement and the body roll back together.
//!
//! The SQL kernel below them and below idem's SQL stores (dialect,
//! identifiers, bind arguments, conflict retry, detached transactions, error
//! classes) is named here too: [`Dialect`], [`Ident`], [`Arg`],
//! [`retry_conflicts`], [`classify`], ...
//!
//! The in-transaction helpers the seed lists beside the guard, each a file
//! over the pieces above and `observe` (technique labels `optimistic`,
//! `pessimistic`, `insert_once`):
//!
//! - [`optimistic`]: a versioned conditional update that tells "version
//!   moved" from "precondition false" from "already applied";
//! - [`pessimistic`]: `SELECT … FOR UPDATE` by an indexed key, and
//!   [`transaction`](pessimistic::transaction), which re-runs a whole
//!   transaction lost to a deadlock or lock-wait timeout;
//! - [`insert_once`]: an insert guarded by a named unique constraint (the
//!   backstop detection), in a savepoint, answering duplicates with the
//!   existing row.
//!
//! The stores never build on this module: what they share with it is the
//! kernel underneath both.

pub(crate) mod caller_tx;
pub(crate) mod conn;
pub(crate) mod in_tx;
pub mod insert_once;
pub mod optimistic;
pub mod pessimistic;
pub(crate) mod savepoint;

pub use crate::sql_kernel::{
    AnyConn, Arg, CONFLICT_RETRIES, Dialect, Failure, Ident, IdentError, MAX_IDENT_BYTES,
    SqlDialect, check_ident, classify, detached, is_retryable_conflict, micros, retry_conflicts,
};
/// [`SqlDb`] under the name the transactional guard's API uses
/// (`idem::TxDb`): the same trait.
pub use conn::SqlDb as TxDb;
pub use conn::{SqlConn, SqlDb};
pub use in_tx::{InTx, TxBody};
