//! Savepoints in the caller's transaction. A technique that writes its own row
//! there (a state transition's `UPDATE`, the consume log's `INSERT`) takes one
//! first: a body error (or the technique's own failed statement, such as a
//! unique violation) rolls back to it, leaving whatever the caller wrote before
//! for the caller to commit or roll back; on PostgreSQL it also makes the
//! transaction usable again after a failed statement.

use std::sync::atomic::{AtomicU64, Ordering};

use super::conn::{SqlConn, SqlDb as _};

/// Savepoint names: unique per process, so a technique nested in another's
/// body (or MySQL's "same name replaces" rule) cannot release the wrong one.
static SAVEPOINTS: AtomicU64 = AtomicU64::new(0);

/// Takes a fresh savepoint named `idem_<what>_<n>` and returns its name.
pub async fn take<C: SqlConn + ?Sized>(conn: &mut C, what: &str) -> Result<String, sqlx::Error> {
    let sp = format!("idem_{what}_{}", SAVEPOINTS.fetch_add(1, Ordering::Relaxed));
    C::Db::simple(conn.connection(), format!("SAVEPOINT {sp}")).await?;
    Ok(sp)
}

/// Keeps what was done since `sp` (`RELEASE SAVEPOINT`).
pub async fn release<C: SqlConn + ?Sized>(conn: &mut C, sp: &str) -> Result<(), sqlx::Error> {
    C::Db::simple(conn.connection(), format!("RELEASE SAVEPOINT {sp}")).await
}

/// Undoes what was done since `sp` and drops it. A failure here leaves the
/// caller's transaction unusable, so its commit fails too: logged, and the
/// original error is what the caller sees.
pub async fn rollback<C: SqlConn + ?Sized>(conn: &mut C, sp: &str) {
    let sql = format!("ROLLBACK TO SAVEPOINT {sp}");
    if let Err(e) = C::Db::simple(conn.connection(), sql).await {
        tracing::warn!(error = %e, savepoint = sp, "idem: rolling back to a savepoint failed");
        return;
    }
    let _ = release(conn, sp).await;
}
