//! Savepoints in the caller's transaction, for the in-transaction techniques:
//! a failed step rolls back to its savepoint, so its own writes go while what
//! the caller wrote before stays for the caller to commit or roll back (and on
//! PostgreSQL the transaction is usable again after a failed statement).

use std::sync::atomic::{AtomicU64, Ordering};

use super::AnyConn;

/// Savepoint names: unique per process, so a technique nested in another's
/// body (or MySQL's "same name replaces" rule) cannot release the wrong one.
static SAVEPOINTS: AtomicU64 = AtomicU64::new(0);

/// A savepoint taken in the caller's transaction; end it with
/// [`release`](Self::release) or [`rollback`](Self::rollback).
#[derive(Debug)]
pub(crate) struct Savepoint {
    name: String,
}

impl Savepoint {
    /// `SAVEPOINT idem_<prefix>_<n>`.
    pub(crate) async fn take(conn: &mut AnyConn<'_>, prefix: &str) -> Result<Self, sqlx::Error> {
        let name = format!(
            "idem_{prefix}_{}",
            SAVEPOINTS.fetch_add(1, Ordering::Relaxed)
        );
        conn.simple(format!("SAVEPOINT {name}")).await?;
        Ok(Savepoint { name })
    }

    /// Keeps what was written since the savepoint.
    pub(crate) async fn release(self, conn: &mut AnyConn<'_>) -> Result<(), sqlx::Error> {
        conn.simple(format!("RELEASE SAVEPOINT {}", self.name))
            .await
    }

    /// Undoes what was written since the savepoint. A failure here leaves the
    /// caller's transaction unusable, so its commit fails too: logged, and the
    /// error that led here is what the caller sees.
    pub(crate) async fn rollback(self, conn: &mut AnyConn<'_>) {
        let sql = format!("ROLLBACK TO SAVEPOINT {}", self.name);
        if let Err(e) = conn.simple(sql).await {
            tracing::warn!(error = %e, "idem: rolling back to a savepoint failed");
            return;
        }
        let _ = conn
            .simple(format!("RELEASE SAVEPOINT {}", self.name))
            .await;
    }
}
