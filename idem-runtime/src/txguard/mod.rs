//! The transactional guard: the idempotency record written in the caller's
//! own database transaction, so the business rows and the record commit or
//! roll back together (Stripe's design). A crash between the business write
//! and the record cannot leave one without the other.
//!
//! ```text
//! SAVEPOINT ─ claim the key in the caller's transaction (the record table's row)
//!   ├─ Claimed: run the body on the same transaction
//!   │    ├─ Ok  → complete the row (result, ttl)                   → Executed
//!   │    └─ Err → ROLLBACK TO SAVEPOINT (claim and body writes go)  → the error
//!   ├─ Done (committed record)  → replay the stored value → Replayed/Waited
//!   └─ Busy (a live claim a guard outside any transaction committed) → InProgress
//! the caller commits: business rows and record become visible at once
//! ```
//!
//! On PostgreSQL and MySQL the savepoint of a call that did not fail is left
//! to the transaction's end rather than released (one round trip less: a
//! first call is `SAVEPOINT`, the claim, the complete); SQLite releases it.
//! [`TxGuard::savepoint`]`(false)` takes none: a failing body then deletes the
//! claim by a compensating statement, and the caller must roll back.
//!
//! A concurrent duplicate's claim blocks on the record's primary key until the
//! first transaction ends, then replays (commit) or runs (rollback). What each
//! database needs:
//!
//! | database | isolation | behaviour of a concurrent duplicate |
//! |---|---|---|
//! | PostgreSQL | `READ COMMITTED` (the default) | waits on the key, then replays or runs |
//! | PostgreSQL | `REPEATABLE READ`, `SERIALIZABLE` | waits, then its transaction is aborted (40001): [`Error::TxConflict`](crate::Error::TxConflict); the retried transaction replays |
//! | MySQL/MariaDB | `REPEATABLE READ` (default) or `READ COMMITTED` | waits on the key's fence slot, then replays or runs (current reads); a deadlock victim gets `TxConflict` |
//! | SQLite | always serializable | the transaction must be `BEGIN IMMEDIATE` (`pool.begin_with("BEGIN IMMEDIATE")`): duplicates queue at `BEGIN`; a deferred one gets `TxConflict` (busy) |
//!
//! The record table is the one [`SqlStore::migrate`](crate::sql::SqlStore::migrate)
//! creates (names from [`IdemBuilder::tx_tables`](crate::IdemBuilder::tx_tables)).
//! When the handle's store is Redis or memory, it is a front: it answers
//! finished keys before the transaction is touched and learns records that
//! replays read from the table; it is never written before the caller's commit.
//!
//! The in-transaction claim row is completed or removed before the guard
//! returns, so renewal and waiting budgets do not apply: the database's lock
//! wait (`lock_timeout`, `innodb_lock_wait_timeout`, `busy_timeout`) bounds a
//! duplicate's wait. The `lease` does apply: a caller dropped mid-body that
//! then commits its transaction anyway commits the unfinished claim row, and
//! the lease bounds how long it blocks the key.

mod front;
mod marks;
mod run;
mod statements;
mod tables;

pub use crate::db::{InTx, TxBody, TxDb};

use crate::guard::Guard;

/// A guarded call whose record lives in the caller's transaction:
/// `idem.guard(scene, parts).in_tx(&mut tx).run(|tx, fence| Box::pin(async move { … }))`
/// (the body gets an [`InTx`], which derefs to the connection).
///
/// ```no_run
/// # async fn f(pool: sqlx::SqlitePool, idem: idem::Idem) -> Result<(), idem::Error> {
/// let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.map_err(|e| idem::Error::Config(e.to_string()))?;
/// let out = idem
///     .guard("refund", &[&"order-7", &"refund-1"])
///     .in_tx(&mut tx)
///     .run(|tx, _fence| Box::pin(async move {
///         sqlx::query("UPDATE orders SET refunded = refunded + 5 WHERE no = 'order-7'")
///             .execute(&mut **tx)
///             .await
///             .map_err(|e| idem::Error::Config(e.to_string()))?;
///         Ok::<_, idem::Error>(5_i64)
///     }))
///     .await?;
/// tx.commit().await.map_err(|e| idem::Error::Config(e.to_string()))?;
/// # let _ = out; Ok(()) }
/// ```
#[must_use = "a guard does nothing until `.run(...)` is awaited"]
#[derive(Debug)]
pub struct TxGuard<'h, 'g, 't, DB: TxDb> {
    guard: Guard<'h>,
    tx: &'g mut sqlx::Transaction<'t, DB>,
    savepoint: bool,
}

impl<DB: TxDb> TxGuard<'_, '_, '_, DB> {
    /// Whether the call runs inside a savepoint of `tx` (the default: `true`).
    ///
    /// With one, a failing body (its error, or a failed statement in it)
    /// rolls back to the savepoint: the claim and the body's rows go, what
    /// the caller wrote before stays, and the transaction is usable, so the
    /// caller may go on and commit. It costs one statement per call (and a
    /// `ROLLBACK TO` and a `RELEASE` on a failing one).
    ///
    /// `savepoint(false)` sends no savepoint: a first call is the claim and the
    /// complete. After a failing body the guard deletes its own claim (one
    /// statement, if the transaction still accepts it) and returns the body's
    /// error, and **the caller must roll the transaction back**: the body's
    /// rows are still in it. On PostgreSQL a failed statement aborts the
    /// transaction, which can then only roll back. Either way no claim without
    /// a result is committed, and a retry runs the body.
    pub fn savepoint(mut self, savepoint: bool) -> Self {
        self.savepoint = savepoint;
        self
    }
}

impl<'h> Guard<'h> {
    /// Writes this call's claim and result record in the caller's transaction
    /// `tx` instead of the store (see [`crate::txguard`]): the body runs on
    /// the same transaction, and its rows and the record commit together.
    /// `ttl`, `version`, `fingerprint` and `lease` (how long a claim row that
    /// was committed unfinished blocks the key) apply; `wait`, `concurrent`,
    /// `max_hold`, `backstop` and degrading do not (the database's lock wait
    /// replaces them).
    pub fn in_tx<'g, 't, DB: TxDb>(
        self,
        tx: &'g mut sqlx::Transaction<'t, DB>,
    ) -> TxGuard<'h, 'g, 't, DB> {
        TxGuard {
            guard: self,
            tx,
            savepoint: true,
        }
    }
}
