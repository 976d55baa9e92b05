//! Savepoints in the caller's transaction. A technique that writes there (the
//! transactional guard's claim, a state transition's `UPDATE`, the consume
//! log's `INSERT`, insert-once's rows) takes one first: a failed step (the
//! body's error, or the technique's own failed statement, such as a unique
//! violation) rolls back to it, so its own writes go while what the caller
//! wrote before stays for the caller to commit or roll back; on PostgreSQL it
//! also makes the transaction usable again after a failed statement.
//!
//! A technique may be told to take none ([`Scope::Bare`], `savepoint = false`):
//! it then undoes only its own write after a failing body, by a compensating
//! statement (a claim deleted, a state set back), which the technique runs
//! when [`Scope::undo`] says so; the body's rows are the caller's to roll
//! back, and on PostgreSQL a failed statement leaves the transaction aborted
//! (the compensation fails too, and nothing of it can commit).

use std::sync::atomic::{AtomicU64, Ordering};

use super::SqlConn;
use super::caller_tx::tx_error;
use crate::error::Error;
use crate::observe::CallOutcome;

/// Savepoint names: unique per process, so a technique nested in another's
/// body (or MySQL's "same name replaces" rule) cannot release the wrong one.
static SAVEPOINTS: AtomicU64 = AtomicU64::new(0);

/// A savepoint taken in the caller's transaction; end it with
/// [`release`](Self::release), [`keep`](Self::keep) or
/// [`rollback`](Self::rollback) (or hold it in a [`Scope`]).
#[derive(Debug)]
pub(crate) struct Savepoint {
    name: String,
}

impl Savepoint {
    /// `SAVEPOINT idem_<what>_<n>`.
    pub(crate) async fn take<C: SqlConn + ?Sized>(
        conn: &mut C,
        what: &str,
    ) -> Result<Self, sqlx::Error> {
        let name = format!("idem_{what}_{}", SAVEPOINTS.fetch_add(1, Ordering::Relaxed));
        conn.any().simple(format!("SAVEPOINT {name}")).await?;
        Ok(Savepoint { name })
    }

    /// Keeps what was written since the savepoint.
    pub(crate) async fn release<C: SqlConn + ?Sized>(
        self,
        conn: &mut C,
    ) -> Result<(), sqlx::Error> {
        release(conn, &self.name).await
    }

    /// Keeps what was written since the savepoint, on the success path. On
    /// PostgreSQL and MySQL a savepoint lives only inside a transaction,
    /// whose `COMMIT` or `ROLLBACK` ends it with everything in it, so the
    /// savepoint is left there and the `RELEASE` round trip is saved: it
    /// changes nothing the caller can see (names are unique, so a later
    /// `ROLLBACK TO` of another savepoint finds its own). SQLite releases it:
    /// a savepoint taken outside `BEGIN` is the transaction itself, which
    /// only its release commits.
    pub(crate) async fn keep<C: SqlConn + ?Sized>(self, conn: &mut C) -> Result<(), sqlx::Error> {
        #[cfg(feature = "sqlite")]
        if matches!(conn.any(), crate::sql_kernel::AnyConn::Sqlite(_)) {
            return release(conn, &self.name).await;
        }
        let _ = conn;
        Ok(())
    }

    /// Undoes what was written since the savepoint. A failure here leaves the
    /// caller's transaction unusable, so its commit fails too: logged, and the
    /// error that led here is what the caller sees.
    pub(crate) async fn rollback<C: SqlConn + ?Sized>(self, conn: &mut C) {
        let sql = format!("ROLLBACK TO SAVEPOINT {}", self.name);
        if let Err(e) = conn.any().simple(sql).await {
            tracing::warn!(error = %e, savepoint = self.name, "idem: rolling back to a savepoint failed");
            return;
        }
        let _ = release(conn, &self.name).await;
    }

    /// Undoes what was written since the savepoint, or fails: then the
    /// savepoint is gone (MySQL rolls a deadlocked transaction back whole)
    /// and nothing more may run in what the caller believes is one
    /// transaction.
    #[cfg_attr(not(any(feature = "rabbitmq", feature = "nats")), allow(dead_code))]
    pub(crate) async fn undo<C: SqlConn + ?Sized>(self, conn: &mut C) -> Result<(), sqlx::Error> {
        let sql = format!("ROLLBACK TO SAVEPOINT {}", self.name);
        conn.any().simple(sql).await?;
        release(conn, &self.name).await
    }
}

/// `RELEASE SAVEPOINT name`.
async fn release<C: SqlConn + ?Sized>(conn: &mut C, name: &str) -> Result<(), sqlx::Error> {
    conn.any().simple(format!("RELEASE SAVEPOINT {name}")).await
}

/// What a technique holds in the caller's transaction while its body runs:
/// a savepoint (the default), or nothing (`savepoint = false`), in which case
/// a failing call undoes the technique's own write by a compensating
/// statement.
#[derive(Debug)]
pub(crate) enum Scope {
    /// A savepoint: a failure rolls back to it, the body's writes included.
    Held(Savepoint),
    /// No savepoint: one statement less on every path, two on a failing one.
    Bare,
}

impl Scope {
    /// Takes a savepoint when `savepoint` is true; else nothing is sent.
    pub(crate) async fn take<C: SqlConn + ?Sized>(
        conn: &mut C,
        what: &str,
        savepoint: bool,
    ) -> Result<Self, sqlx::Error> {
        match savepoint {
            true => Savepoint::take(conn, what).await.map(Scope::Held),
            false => Ok(Scope::Bare),
        }
    }

    /// Keeps what was written (see [`Savepoint::keep`]).
    pub(crate) async fn keep<C: SqlConn + ?Sized>(self, conn: &mut C) -> Result<(), sqlx::Error> {
        match self {
            Scope::Held(sp) => sp.keep(conn).await,
            Scope::Bare => Ok(()),
        }
    }

    /// The body of a technique that holds the scope around it (a state
    /// transition, a consume) ended with `out`: kept (`kept`, the body's
    /// value) or undone (`Released`, the body's error as is). A failed
    /// release is mapped by [`tx_error`] on `key`. The flag is true when the
    /// technique must now run its compensating statement (no savepoint, and
    /// the body failed).
    pub(crate) async fn finish<C, T, E>(
        self,
        conn: &mut C,
        key: &str,
        out: Result<T, E>,
        kept: CallOutcome,
    ) -> (CallOutcome, Result<T, E>, bool)
    where
        C: SqlConn + ?Sized,
        E: From<Error>,
    {
        match out {
            Ok(v) => match self.keep(conn).await {
                Ok(()) => (kept, Ok(v), false),
                Err(e) => (CallOutcome::Failed, Err(E::from(tx_error(key, e))), false),
            },
            Err(e) => {
                let compensate = self.undo(conn).await;
                (CallOutcome::Released, Err(e), compensate)
            }
        }
    }

    /// Undoes what was written: rolls back to the savepoint and returns
    /// false, or, without one, returns true: the technique then runs its
    /// compensating statement (and reports it with [`compensated`]).
    #[must_use = "without a savepoint the technique must compensate"]
    pub(crate) async fn undo<C: SqlConn + ?Sized>(self, conn: &mut C) -> bool {
        match self {
            Scope::Held(sp) => {
                sp.rollback(conn).await;
                false
            }
            Scope::Bare => true,
        }
    }
}

/// The compensating statement of a call without a savepoint ended with
/// `result`. A failure is expected after a failed statement on PostgreSQL
/// (the transaction is aborted, so nothing of the call can commit) and is
/// logged at debug level; the error that led here is what the caller sees.
pub(crate) fn compensated(key: &str, result: Result<(), sqlx::Error>) {
    if let Err(e) = result {
        tracing::debug!(key, error = %e, "idem: compensating statement failed; the caller's transaction must roll back");
    }
}
