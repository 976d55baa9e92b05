//! The SQL kernel: what every piece of idem that talks to a SQL database needs,
//! written once, below both users: the SQL stores (`store/sql/`, idem's own
//! records) and the SQL techniques (`db/`, `state/`, `txguard/`, `consume/`,
//! `outbox/`, in the *caller's* database). Each answer here is subtle enough
//! that a second copy would drift:
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
//! - `arg`: bind parameters ([`Arg`]) and the dialect's placeholders, so a
//!   statement is written once and runs on the connection by driver
//!   (`any_conn`);
//! - `time`: durations as the integer microseconds the drivers bind.
//!
//! It knows nothing above it: no records, stores, errors of idem's, handle or
//! technique. Its public types are named at `idem::db`, where users meet them.

pub(crate) mod any_conn;
pub(crate) mod arg;
pub(crate) mod classify;
pub(crate) mod dialect;
pub(crate) mod ident;
mod reserved;
pub(crate) mod retry;
pub(crate) mod time;
pub(crate) mod tx;

pub use any_conn::AnyConn;
pub use arg::Arg;
pub use classify::{Failure, classify};
pub use dialect::{Dialect, SqlDialect};
pub use ident::{Ident, IdentError, MAX_IDENT_BYTES, check_ident};
pub use retry::{CONFLICT_RETRIES, is_retryable_conflict, retry_conflicts};
pub use time::micros;
pub use tx::detached;
