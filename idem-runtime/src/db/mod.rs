//! The SQL kernel: what every SQL technique needs against a database, written
//! once.
//!
//! idem's SQL stores keep their records in a database, and the SQL techniques
//! (optimistic and pessimistic locks, the transactional guard, state machines,
//! the consume log) work in the *caller's* database. Both meet the same
//! questions, and each answer here is subtle enough that a second copy would
//! drift:
//!
//! - [`dialect`]: which database this is ([`Dialect`]), from a URL or a sqlx
//!   driver type.
//! - [`ident`]: table and column names are spliced into SQL text, so they are
//!   checked (plain identifiers, no reserved words) and quoted per dialect.
//! - [`retry`]: deadlock victims and lock-wait timeouts are retried
//!   ([`retry_conflicts`]); MariaDB picks victims among concurrent upserts of
//!   one key, so this is not a corner case.
//! - [`tx`]: a multi-statement transaction runs detached ([`detached`]) so a
//!   caller that stops waiting cannot leave a pooled connection inside it.
//! - [`classify`](mod@classify): what a `sqlx::Error` means for the caller ([`Failure`]):
//!   an outage, a missing table, a value the column cannot hold, ...
//! - [`conn`]: the caller's connection ([`SqlConn`]) and the driver calls the
//!   caller-transaction techniques make ([`SqlDb`]);
//! - [`savepoint`]: the savepoint a technique takes in the caller's transaction,
//!   so its own statement and the body roll back together;
//! - [`time`]: durations as the integer microseconds the drivers bind.
//! - [`conn`]: the caller's connection as one of the drivers ([`AnyConn`],
//!   [`TxDb`]) and bind parameters ([`Arg`]); `savepoint`: savepoints in it.
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

pub mod classify;
pub mod conn;
pub mod tx_conn;
pub mod dialect;
pub mod ident;
pub mod insert_once;
pub mod optimistic;
pub mod pessimistic;
mod reserved;
pub mod retry;
pub mod savepoint;
pub(crate) mod tx_savepoint;
pub mod time;
pub mod tx;

pub use classify::{Failure, classify};
pub use tx_conn::{AnyConn, Arg, InTx, TxBody, TxDb};
pub use conn::{SqlConn, SqlDb};
pub use dialect::{Dialect, SqlDialect};
pub use ident::{Ident, IdentError, MAX_IDENT_BYTES, check_ident};
pub use retry::{is_retryable_conflict, retry_conflicts};
pub use time::micros;
pub use tx::detached;
