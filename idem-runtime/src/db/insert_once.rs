//! Insert-once: an insert guarded by a named unique constraint,
//! in the caller's transaction. A duplicate is told by the same backstop
//! detection as `#[idempotent(backstop = …)]` (the driver error's chain,
//! the constraint named by the database or, on SQLite, whose errors name
//! columns only, the index of that name looked up on the caller's own
//! connection) and answered with the existing row ([`Inserted::Existing`]).
//!
//! `find` runs in the caller's transaction, so it sees what that transaction
//! may see. Under `READ COMMITTED` (PostgreSQL's default) and on SQLite it
//! sees the conflicting row. Under MySQL/MariaDB's `REPEATABLE READ` (their
//! default) a plain `SELECT` reads the transaction's snapshot, which misses a
//! row committed after the transaction's first read: write `find` as a
//! locking read (`SELECT … FOR SHARE` / `LOCK IN SHARE MODE`, or
//! `FOR UPDATE`), which reads the latest committed row. Under PostgreSQL's
//! `REPEATABLE READ` or `SERIALIZABLE` such a row is invisible even to a
//! locking read: have `find` return an `Option` and retry the whole
//! transaction when it is `None` (the retry's snapshot has the row), or use
//! `READ COMMITTED` for this transaction.
//!
//! The insert runs inside a savepoint: when the parent's insert (or any later
//! one) hits the constraint, everything the closure wrote is rolled back, so
//! a duplicate leaves no orphan children, and the caller's transaction stays
//! usable (PostgreSQL aborts a transaction on a failed statement otherwise).
//! Put the constrained insert first, so a duplicate costs one statement.

use super::caller_tx::tx_error;
use super::savepoint::Savepoint;
use super::{InTx, SqlConn as _, TxBody, TxDb};
use crate::backstop::find_unique_violation;
use crate::backstop::lookup_on;
use crate::error::Error;
use crate::observe::instrument::Fenced;
use crate::observe::{CallOutcome, Observer, Technique};

/// What an insert-once call found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inserted<T> {
    /// The rows were inserted now; the insert closure's value.
    New(T),
    /// The constraint already held a row: the find closure's value.
    Existing(T),
}

impl<T> Inserted<T> {
    /// The value, new or existing.
    pub fn into_inner(self) -> T {
        match self {
            Inserted::New(v) | Inserted::Existing(v) => v,
        }
    }

    /// True for a duplicate.
    pub fn is_existing(&self) -> bool {
        matches!(self, Inserted::Existing(_))
    }
}

impl<T> Fenced for Result<Inserted<T>, Error> {
    fn fence(&self) -> Option<crate::fence::Fence> {
        None
    }
}

/// An insert guarded by the unique constraint `constraint`.
///
/// ```no_run
/// # async fn f(pool: sqlx::SqlitePool) -> Result<(), idem::Error> {
/// use idem::db::insert_once::InsertOnce;
/// let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.map_err(|e| idem::Error::Config(e.to_string()))?;
/// let id = InsertOnce::new("uk_order_no")
///     .run(
///         &mut tx,
///         "o-1",
///         |tx| Box::pin(async move {
///             sqlx::query("INSERT INTO orders (order_no) VALUES ('o-1')").execute(&mut **tx).await?;
///             Ok(1)
///         }),
///         |tx| Box::pin(async move {
///             sqlx::query_scalar("SELECT 1 FROM orders WHERE order_no = 'o-1'").fetch_one(&mut **tx).await
///         }),
///     )
///     .await?;
/// # let _ = id; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InsertOnce<'h> {
    constraint: String,
    idem: Option<&'h crate::handle::Idem>,
    observer: Observer<'h>,
}

impl<'h> InsertOnce<'h> {
    /// Inserts guarded by the unique constraint (or index) `constraint`.
    pub fn new(constraint: &str) -> Self {
        InsertOnce {
            constraint: constraint.to_owned(),
            idem: None,
            observer: Observer::default(),
        }
    }

    /// Counts calls under `idem`'s statistics. SQLite's violations name
    /// columns, not the index: they are matched against the index called
    /// `constraint`, looked up on the caller's own connection (no second
    /// pooled connection, none cached, no `verify()` needed). When the
    /// database has no index of that name, `idem`'s constraint catalog
    /// (`IdemBuilder::constraints`) decides; without a handle (or a catalog)
    /// the violation is taken as this one.
    pub fn handle(mut self, idem: &'h crate::handle::Idem) -> Self {
        self.idem = Some(idem);
        self.observer = idem.observer();
        self
    }

    /// Runs `insert` in a savepoint of the caller's transaction; when it
    /// violates the constraint, rolls it back and returns what `find` reads
    /// (`key` names the call in the span and errors).
    pub async fn run<'g, 't, DB, T, I, F>(
        &self,
        tx: &'g mut sqlx::Transaction<'t, DB>,
        key: &str,
        insert: I,
        find: F,
    ) -> Result<Inserted<T>, Error>
    where
        DB: TxDb,
        I: for<'a> FnOnce(&'a mut InTx<'g, 't, DB>) -> TxBody<'a, T, sqlx::Error>,
        F: for<'a> FnOnce(&'a mut InTx<'g, 't, DB>) -> TxBody<'a, T, sqlx::Error>,
    {
        let mut cx = InTx::new(tx);
        let op = || async {
            let r = self.once(&mut cx, key, insert, find).await;
            let label = match &r {
                Ok(Inserted::New(_)) => CallOutcome::Executed,
                Ok(Inserted::Existing(_)) => CallOutcome::Backstop,
                Err(_) => CallOutcome::Failed,
            };
            (label, r)
        };
        self.observer
            .run(Technique::InsertOnce, &self.constraint, key, op)
            .await
    }

    async fn once<'g, 't, DB, T, I, F>(
        &self,
        cx: &mut InTx<'g, 't, DB>,
        key: &str,
        insert: I,
        find: F,
    ) -> Result<Inserted<T>, Error>
    where
        DB: TxDb,
        I: for<'a> FnOnce(&'a mut InTx<'g, 't, DB>) -> TxBody<'a, T, sqlx::Error>,
        F: for<'a> FnOnce(&'a mut InTx<'g, 't, DB>) -> TxBody<'a, T, sqlx::Error>,
    {
        let sp = Savepoint::take(cx, "once")
            .await
            .map_err(|e| tx_error(key, e))?;
        match insert(cx).await {
            Ok(v) => {
                sp.release(cx).await.map_err(|e| tx_error(key, e))?;
                Ok(Inserted::New(v))
            }
            Err(e) => {
                sp.rollback(cx).await;
                if !self.is_ours(cx, &e).await {
                    return Err(tx_error(key, e));
                }
                let v = find(cx).await.map_err(|e| tx_error(key, e))?;
                Ok(Inserted::Existing(v))
            }
        }
    }

    /// Is `e` a violation of this constraint (the backstop detection)? A
    /// violation the database names (PostgreSQL, MySQL) is matched by name;
    /// an unnamed one (SQLite names columns) by the index's definition,
    /// looked up on the caller's own connection: another pooled connection
    /// may never come while this transaction holds SQLite's write lock and
    /// the pool's other connections wait for it.
    async fn is_ours<DB: TxDb>(&self, cx: &mut InTx<'_, '_, DB>, e: &sqlx::Error) -> bool {
        let Some(v) = find_unique_violation(e) else {
            return false;
        };
        if let Some(named) = v.names(&self.constraint) {
            return named;
        }
        match lookup_on(cx.any(), &self.constraint).await {
            Ok(Some(def)) => v.is_on(&def),
            // No index of that name here (a primary key, a name only the
            // handle's catalog knows): the rule as before this lookup.
            Ok(None) => match self.idem {
                Some(idem) => idem.violation_matches(&self.constraint, &v).await,
                None => true,
            },
            Err(e) => {
                tracing::warn!(constraint = %self.constraint, error = %e, "idem: constraint lookup failed");
                false
            }
        }
    }
}
