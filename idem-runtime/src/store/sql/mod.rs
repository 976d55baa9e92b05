//! SQL record stores (SQLite, PostgreSQL, MySQL/MariaDB) through `sqlx`, with
//! one-time tokens in a table of their own.
//!
//! One table holds the records, one object hands out fences, and a third table
//! ([`TableNames::tokens`], `idem_tokens` by default) the one-time tokens. Records:
//!
//! | column        | PostgreSQL    | MySQL/MariaDB      | SQLite            |
//! |---------------|---------------|--------------------|-------------------|
//! | `idem_key`    | `TEXT` PK     | `VARBINARY(768)` PK (byte-exact: no collation, no pad) | `TEXT` PK |
//! | `state`       | `SMALLINT` (0 in progress, 1 done) | `SMALLINT` | `INTEGER` |
//! | `owner`       | `BYTEA` (16)  | `BINARY(16)`       | `BLOB`            |
//! | `fence`       | `BIGINT`      | `BIGINT`           | `INTEGER`         |
//! | `fingerprint` | `BYTEA` (16)  | `BINARY(16)`       | `BLOB`            |
//! | `payload`     | `BYTEA`       | `LONGBLOB`         | `BLOB`            |
//! | `expires_at`  | `TIMESTAMPTZ` | `DATETIME(6)` (UTC) | `INTEGER` (µs since the epoch) |
//!
//! Fences come from a sequence (PostgreSQL), a table of 64 counters
//! `max(v + 1, now_µs)` picked by a hash of the key (MySQL/MariaDB), or a one-row
//! counter `max(v + 1, now_µs)` (SQLite). None of them is touched by `forget` or
//! `purge_expired`, so a key's fences never go backwards. The PostgreSQL
//! sequence must keep `CACHE 1` (its default): with a cache, each connection
//! takes a block of values and fences of concurrent connections interleave out
//! of order, so [`Store::verify`] refuses a cached sequence, naming the fix.
//!
//! Expiry is always computed by the database clock inside the statements
//! at the statement's start (`statement_timestamp()`, `UTC_TIMESTAMP(6)`,
//! `unixepoch('subsec')`; never PostgreSQL's `now()`, the start of a transaction
//! that may be the caller's), never by the callers'
//! clocks, so several application hosts with skewed clocks agree.
//!
//! The tables of the techniques that keep rows beside the records (the
//! consume log of `#[consume_once]`, `idem_consume_log` by default, and the
//! transactional outbox of `idem::outbox`, `idem_outbox`) register as table
//! sets ([`TableSet`], [`table_sets`]): `ddl()`, `migrate()`, the purge, the
//! dry-run counts and `verify()` handle them with the records and the tokens.
//! Their names are in [`TableNames`] too ([`TableNames::table`]). Operators read
//! both per topic and per consumer, and list and unpark parked messages
//! ([`SqlStore::outbox_topics`], [`SqlStore::consume_log_counts`]).
//!
//! Migrations never run implicitly: call [`SqlStore::migrate`] or apply [`ddl`]
//! with your own migration tool, then [`Store::verify`] at start-up (a missing
//! table, the token table included, is an error naming it). `purge_expired`
//! deletes expired records and expired tokens, in one time budget.
//!
//! # One-time tokens
//! A token row holds the token's key (scope and blake3 digest, never the token),
//! its owner and lease while it is being consumed, the last take's fence, and
//! its expiry from `issue`, on the database clock like a record's. Each change
//! is one owner-checked statement, idempotent for its owner: a `take` retried
//! after a lost reply finds the token its own and answers `Taken` with the same
//! fence. PostgreSQL answers every take in one statement; MySQL/MariaDB and
//! SQLite read the row first (a waiter polling a busy token costs one `SELECT`)
//! and update only a takeable one.
//!
//! # The claim, per dialect
//! - PostgreSQL: one statement. A CTE reads the live row; only when there is none
//!   does it `INSERT … ON CONFLICT (idem_key) DO UPDATE … WHERE expires_at <= statement_timestamp()
//!   RETURNING fence`, so duplicates and waiters stay read-only (no row lock, no
//!   transaction id, no log flush).
//! - MySQL/MariaDB: a `SELECT`; for a missing or expired key, one transaction with
//!   the slot's fence and an `INSERT … ON DUPLICATE KEY UPDATE` whose branches set
//!   `LAST_INSERT_ID` to say whether the key was taken (rows-affected cannot: the
//!   driver sets `CLIENT_FOUND_ROWS`). Not `INSERT IGNORE`, which would turn data
//!   errors such as truncation into warnings. Deadlocks (1213) and lock-wait
//!   timeouts (1205) are retried inside the store.
//! - SQLite: a `SELECT`; for a missing or expired key, a `BEGIN IMMEDIATE`
//!   transaction with the one-row counter and an `INSERT … ON CONFLICT DO UPDATE …
//!   WHERE … RETURNING`. The writers of one process take turns on an async lock
//!   rather than sleeping in SQLite's busy handler.
//!
//! Within one process, claims of one key take turns, a claim granted here answers
//! its local duplicates without a round trip until its owner completes, releases
//! or loses it, and queued claims share a finished-record read that started after
//! they arrived (see `local.rs`). Finished records are never cached.
//!
//! # Dialect differences users should know
//! - Fences: PostgreSQL's are sequence numbers (small, shared by all keys);
//!   MySQL's and SQLite's are microsecond timestamps bumped past the last one.
//!   Both only promise "larger than every earlier fence of this key".
//! - Keys are compared byte for byte everywhere (MySQL: `VARBINARY`, not a
//!   collation that would merge `A`/`a` or ignore trailing spaces).
//! - SQLite measures time in milliseconds (`unixepoch('subsec')`), the servers
//!   in microseconds.
//! - Backstops on SQLite must be named unique *indexes* (`CREATE UNIQUE INDEX
//!   uk_… ON …`): a `UNIQUE` clause in `CREATE TABLE` gets an `sqlite_autoindex_…`
//!   name, and SQLite errors name only table and columns, which
//!   `SqlConstraints` (the backstop layer's catalog) maps back to the index. MySQL index names are per table:
//!   give backstops names unique in the database.
//! - MariaDB does not fill `constraint()` on its errors; the name is parsed from
//!   the message (after the last `for key '`, so a duplicated value containing
//!   that text does not fool it).
//!
//! # Connection pools
//! sqlx pools ping every connection before handing it out (`test_before_acquire`,
//! on by default). Measured on the development machine, that ping is 17–29% of the
//! cost of one of these statements, and it buys little: a dead connection makes
//! the statement fail as `StoreError::Unavailable`, which the guard retries with
//! the same owner (every store operation is idempotent per owner). The
//! constructors here (`connect`, `open`) therefore turn it off; when you build the
//! pool yourself, consider `.test_before_acquire(false)` too.
//!
//! # Keys
//! A key is at most [`MAX_KEY_BYTES`] bytes on every dialect, and on PostgreSQL
//! it cannot contain a NUL byte (`TEXT` cannot hold one). Such a key is refused
//! before anything is sent, as [`StoreError::Input`] (`Error::InvalidKey`
//! through the guard): the caller's input, not an outage, so it never counts
//! against the circuit breaker.
//!
//! [`Store::verify`]: crate::store::Store::verify

use std::time::Duration;

use crate::store::StoreError;

// Layout: `store.rs` is the `SqlStore` and its `Store` implementation,
// `connect.rs` its constructors, `token.rs` its `TokenStore` (statement text in
// `token_sql.rs`); `table_set.rs` the contract of the table sets that live
// beside the records (`sets.rs`: the records' and the tokens'; the others
// register from their techniques), `schema.rs` the DDL and migration steps
// walked over them, `ops_kit.rs` the helpers of operator reads;
// `postgres.rs`, `mysql.rs` and `sqlite.rs` hold
// only each dialect's claim and driver calls, over `bind.rs` (statements and
// their parameters) and `pool.rs` (the pool of each dialect). Dialect
// detection, identifier checks, conflict retries and detached transactions come
// from the SQL kernel (`sql_kernel/`, whose public types users meet at
// `idem::db`).

#[macro_use]
mod driver_calls;

pub(crate) mod bind;
mod builder;
mod census_sql;
mod claim;
mod connect;
pub(crate) mod ddl;
pub(crate) mod errors;
pub(crate) mod key;
mod local;
#[cfg(feature = "mysql")]
pub(crate) mod mysql;
pub(crate) mod mysql_sql;
mod names;
mod operator_sql;
pub(crate) mod ops_kit;
pub(crate) mod pool;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
mod row;
mod schema;
mod sets;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;
pub(crate) mod stmt;
mod store;
mod table_set;
mod token;
mod token_sql;

pub(crate) use crate::sql_kernel::Dialect;
pub use builder::SqlStoreBuilder;
pub use key::MAX_KEY_BYTES;
pub use names::TableNames;
pub use schema::{ddl, migrations};
pub use store::SqlStore;
pub(crate) use table_set::{Registered, at, count_expired, db_now, never};
pub use table_set::{Shape, TableSet, TableSpec, table_sets};

/// Rows deleted per `purge_expired` statement.
pub(crate) const PURGE_BATCH: i64 = 1_000;
/// Upper bound on the time one `purge_expired` call keeps deleting.
const PURGE_BUDGET: Duration = Duration::from_secs(10);
/// Times a claim re-reads when the row changed between its write and its read.
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub(crate) const CLAIM_ROUNDS: usize = 8;

/// The deadline-bounded purge loop shared by every dialect and table: `batch`
/// deletes up to [`PURGE_BATCH`] expired rows and returns how many it deleted;
/// it runs at least once, and again while full batches come back before
/// `deadline`.
pub(crate) async fn purge_loop<F, Fut>(
    deadline: std::time::Instant,
    mut batch: F,
) -> Result<u64, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<u64, sqlx::Error>>,
{
    let mut total = 0;
    loop {
        let n = batch().await.map_err(errors::map_err)?;
        total += n;
        if n < PURGE_BATCH as u64 || std::time::Instant::now() >= deadline {
            return Ok(total);
        }
    }
}
