//! The pessimistic lock: `SELECT … FOR UPDATE` of one row by an
//! indexed key in the caller's transaction, so read-modify-write sequences on
//! that row take turns. It serialises; it does not deduplicate: a repeated
//! request still needs a unique request-id row (or the transactional guard)
//! in the same transaction.
//!
//! - The key column must lead an index: InnoDB locks every row a scan passes
//!   (a whole-table lock in effect) and PostgreSQL scans the table for each
//!   lock. [`RowLock::lock`] checks this once per table and column in the
//!   catalog (PostgreSQL `pg_index`, MySQL `information_schema.STATISTICS`)
//!   and refuses an unindexed column with `Error::Config`. SQLite has no row
//!   locks: its transaction must be `BEGIN IMMEDIATE`, which takes the
//!   database's write lock at once, and no check is made.
//! - Deadlocks (MariaDB 1213, PostgreSQL 40P01) and lock-wait timeouts abort
//!   the transaction: [`transaction`] runs a whole transaction again, a
//!   bounded number of times, when its closure fails with such a conflict.

use std::collections::HashSet;
use std::sync::Mutex;

use super::caller_tx::tx_error;
use super::{Arg, Dialect, Ident, SqlConn as _, TxBody, TxDb};
use crate::error::Error;
use crate::observe::instrument::Fenced;
use crate::observe::{CallOutcome, Observer, Technique};
use crate::sql_kernel::arg::placeholders;
use crate::sql_kernel::retry::{CONFLICT_RETRIES, is_retryable_conflict, pause};

/// Tables and columns whose index was found: checked once per process.
static INDEXED: Mutex<Option<HashSet<(Dialect, String, String)>>> = Mutex::new(None);

/// Locks one row by key in the caller's transaction.
///
/// ```
/// use idem::db::pessimistic::RowLock;
/// let order = RowLock::new("t_pay", "order_no")?;
/// # Ok::<(), idem::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct RowLock<'h> {
    table: Ident,
    key: Ident,
    observer: Observer<'h>,
}

impl Fenced for Result<bool, Error> {
    fn fence(&self) -> Option<crate::fence::Fence> {
        None
    }
}

impl<'h> RowLock<'h> {
    /// The rows of `table` by `key_column` (which must lead an index).
    pub fn new(table: &str, key_column: &str) -> Result<Self, Error> {
        let id = |s: &str| Ident::new(s).map_err(|e| Error::Config(e.to_string()));
        Ok(RowLock {
            table: id(table)?,
            key: id(key_column)?,
            observer: Observer::default(),
        })
    }

    /// Counts calls under `idem`'s statistics (default: process-wide).
    pub fn handle(mut self, idem: &'h crate::handle::Idem) -> Self {
        self.observer = idem.observer();
        self
    }

    /// Locks the row `key` until the caller's transaction ends: true when it
    /// exists. An unindexed key column is `Error::Config`.
    pub async fn lock<DB: TxDb>(
        &self,
        tx: &mut sqlx::Transaction<'_, DB>,
        key: Arg<'_>,
    ) -> Result<bool, Error> {
        let name = key.render();
        let n = name.as_str();
        let op = move || async move {
            let r = self.locked(tx, key, n).await;
            let label = match r {
                Ok(_) => CallOutcome::Applied,
                Err(_) => CallOutcome::Failed,
            };
            (label, r)
        };
        self.observer
            .run(Technique::Pessimistic, self.table.as_str(), n, op)
            .await
    }

    async fn locked<DB: TxDb>(
        &self,
        tx: &mut sqlx::Transaction<'_, DB>,
        key: Arg<'_>,
        name: &str,
    ) -> Result<bool, Error> {
        let d = DB::DIALECT;
        let mut conn = tx.any();
        let err = |e| tx_error(name, e);
        let id = (d, self.table.to_string(), self.key.to_string());
        let known = INDEXED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert_with(HashSet::new)
            .contains(&id);
        if !known && d != Dialect::Sqlite {
            let probe = match d {
                Dialect::Postgres => {
                    "SELECT COUNT(*)::INT8 FROM pg_index i JOIN pg_attribute a \
                     ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] \
                     WHERE i.indrelid = to_regclass($1) AND a.attname = $2"
                }
                _ => {
                    "SELECT COUNT(*) FROM information_schema.STATISTICS \
                     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ? \
                     AND SEQ_IN_INDEX = 1"
                }
            };
            let args = [Arg::Text(self.table.as_str()), Arg::Text(self.key.as_str())];
            let n = conn.ints(probe, &args).await.map_err(err)?;
            if n.and_then(|v| v.first().copied()).unwrap_or(0) == 0 {
                return Err(Error::Config(format!(
                    "pessimistic lock on `{}.{}`: no index starts with that column, so \
                     `SELECT … FOR UPDATE` would scan (and on MySQL/MariaDB lock) the whole table; \
                     add an index on it",
                    self.table, self.key
                )));
            }
            INDEXED
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert_with(HashSet::new)
                .insert(id);
        }
        let lock = if d == Dialect::Sqlite {
            ""
        } else {
            " FOR UPDATE"
        };
        let sql = format!("SELECT 1 FROM {} WHERE {} = ?{lock}", self.table, self.key);
        let row = conn
            .ints(&placeholders(d, &sql), &[key])
            .await
            .map_err(err)?;
        Ok(row.is_some())
    }
}

/// An error that may say "the transaction lost to a concurrent one": the
/// errors [`transaction`] retries. Implement it for your error type by
/// delegating to the `idem::Error` or `sqlx::Error` it wraps.
pub trait TxConflict {
    /// True for a deadlock victim, a lock-wait timeout, a serialization
    /// failure or SQLite busy.
    fn is_tx_conflict(&self) -> bool;
}

impl TxConflict for sqlx::Error {
    fn is_tx_conflict(&self) -> bool {
        is_retryable_conflict(self)
    }
}

impl TxConflict for Error {
    fn is_tx_conflict(&self) -> bool {
        matches!(self, Error::TxConflict { .. })
    }
}

/// Runs `f` in a transaction of `pool` and commits; when `f` or the commit
/// fails with a conflict ([`TxConflict`]), the transaction is rolled back and
/// run again, at most `CONFLICT_RETRIES` (8) times. SQLite transactions
/// begin with `BEGIN IMMEDIATE` (the write lock at once, as the pessimistic
/// lock needs). Everything `f` does must be safe to do again: it is, when its
/// effects are in the same transaction.
pub async fn transaction<DB, T, E, F>(pool: &sqlx::Pool<DB>, mut f: F) -> Result<T, E>
where
    DB: TxDb,
    E: From<sqlx::Error> + TxConflict,
    F: for<'a> FnMut(&'a mut sqlx::Transaction<'static, DB>) -> TxBody<'a, T, E>,
{
    let mut attempt = 0;
    loop {
        let r = async {
            let mut tx = if DB::DIALECT == Dialect::Sqlite {
                pool.begin_with("BEGIN IMMEDIATE").await?
            } else {
                pool.begin().await?
            };
            let v = f(&mut tx).await?;
            tx.commit().await?;
            Ok::<T, E>(v)
        }
        .await;
        match r {
            Err(e) if e.is_tx_conflict() && attempt < CONFLICT_RETRIES => {
                attempt += 1;
                pause(attempt).await;
            }
            r => return r,
        }
    }
}
