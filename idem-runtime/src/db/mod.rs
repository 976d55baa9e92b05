//! The SQL kernel: what every SQL technique needs against a database, written
//! once.
//!
//! idem's SQL stores keep their records in a database, and the SQL techniques
//! (optimistic and pessimistic locks, the transactional guard, state machines,
//! the consume log) work in the *caller's* database. Both meet the same
//! questions, and each answer here is subtle enough that a second copy would
//! drift:
//!
//! - `dialect`: which database this is ([`Dialect`]), from a URL or a sqlx
//!   driver type.
//! - `ident`: table and column names are spliced into SQL text, so they are
//!   checked (plain identifiers, no reserved words) and quoted per dialect.
//! - `retry`: deadlock victims and lock-wait timeouts are retried
//!   ([`retry_conflicts`]); MariaDB picks victims among concurrent upserts of
//!   one key, so this is not a corner case.
//! - `tx`: a multi-statement transaction runs detached ([`detached`]) so a
//!   caller that stops waiting cannot leave a pooled connection inside it.
//! - `classify`: what a `sqlx::Error` means for the caller ([`Failure`]):
//!   an outage, a missing table, a value the column cannot hold, ...
//! - `conn`: the caller's connection, whatever holds it ([`SqlConn`]), and
//!   its database ([`SqlDb`], also named [`TxDb`]): the one way every
//!   caller-transaction technique reaches the connection;
//! - `arg`: bind parameters ([`Arg`]) and the dialect's placeholders, so a
//!   statement is written once and runs on the connection by driver
//!   (`any_conn`);
//! - `in_tx`: the caller's transaction as a body run inside it sees it
//!   ([`InTx`], [`TxBody`]);
//! - `savepoint`: the savepoint a technique takes in the caller's transaction,
//!   so its own statement and the body roll back together;
//! - `time`: durations as the integer microseconds the drivers bind.
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
//! Nothing here knows idem's records, stores or guard: the stores build on
//! this module, never the reverse.

pub(crate) mod any_conn;
pub(crate) mod arg;
pub(crate) mod caller_tx;
pub(crate) mod classify;
pub(crate) mod conn;
pub(crate) mod dialect;
pub(crate) mod ident;
pub(crate) mod in_tx;
pub mod insert_once;
pub mod optimistic;
pub mod pessimistic;
mod reserved;
pub(crate) mod retry;
pub(crate) mod savepoint;
pub(crate) mod time;
pub(crate) mod tx;

pub use any_conn::AnyConn;
pub use arg::Arg;
pub use classify::{Failure, classify};
/// [`SqlDb`] under the name the transactional guard's API uses
/// (`idem::TxDb`): the same trait.
pub use conn::SqlDb as TxDb;
pub use conn::{SqlConn, SqlDb};
pub use dialect::{Dialect, SqlDialect};
pub use ident::{Ident, IdentError, MAX_IDENT_BYTES, check_ident};
pub use in_tx::{InTx, TxBody};
pub use retry::{CONFLICT_RETRIES, is_retryable_conflict, retry_conflicts};
pub use time::micros;
pub use tx::detached;
