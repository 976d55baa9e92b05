//! The handle's store as a *front* of the transactional guard's table: a
//! Redis or memory store answers finished keys without touching the database,
//! and learns a finished record when a replay read it from the table. It is
//! never written before the caller's commit (the guard cannot see the commit,
//! so it writes only records it read back committed: not ones its own
//! transaction claimed, see `marks.rs`), and nothing depends on
//! it: a front store that lost a key, or is down, only costs the short-cut.
//! A SQL store is not used as a front: the table in the transaction is the
//! record already.

use super::marks as tx_marks;
use crate::db::{AnyConn, Dialect};
use crate::handle::Idem;
use crate::observe::Op;
use crate::store::{Claim, ClaimRequest, DoneRecord, Owner, RecordState};

/// Whether the handle's store is a front (not one of the SQL stores).
fn is_front(idem: &Idem) -> bool {
    !matches!(idem.store_name(), "postgres" | "mysql" | "sqlite")
}

/// The front store's finished record of `key`, if it has one and answers.
pub(super) async fn finished(idem: &Idem, key: &str) -> Option<DoneRecord> {
    if !is_front(idem) {
        return None;
    }
    let exec = &idem.inner.exec;
    match exec.op(Op::Inspect, key, || exec.store.inspect(key)).await {
        Ok(Some(RecordState::Done { record, .. })) => Some(record),
        Ok(_) => None,
        Err(e) => {
            tracing::debug!(key, error = %e, "idem: front store read failed; asking the table");
            None
        }
    }
}

/// Notes `key` as claimed by the caller's transaction, so a later replay of
/// it in the same transaction does not copy a record that may yet roll back
/// (issue 24, a). Only when a front store exists.
pub(super) async fn note_claim(
    idem: &Idem,
    dialect: Dialect,
    conn: &mut AnyConn<'_>,
    key: &str,
) -> Result<(), sqlx::Error> {
    if !is_front(idem) {
        return Ok(());
    }
    tx_marks::mark(conn, dialect, key).await
}

/// Whether a finished record of `key` read from the table in the caller's
/// transaction is committed, so the front store may learn it: this
/// transaction did not claim the key (a transaction sees no other
/// transaction's uncommitted rows). False without a front store.
pub(super) async fn learnable(
    idem: &Idem,
    dialect: Dialect,
    conn: &mut AnyConn<'_>,
    key: &str,
) -> Result<bool, sqlx::Error> {
    if !is_front(idem) {
        return Ok(false);
    }
    Ok(!tx_marks::marked(conn, dialect, key).await?)
}

/// Copies a committed record into the front store (claim with a fresh owner,
/// then complete) for `ttl`, the row's time left (issue 24, m: not a fresh
/// ttl), unless it holds the key already. Failures are logged only.
pub(super) async fn publish(idem: &Idem, key: &str, rec: &DoneRecord, ttl: std::time::Duration) {
    if !is_front(idem) || ttl.is_zero() {
        return;
    }
    let exec = &idem.inner.exec;
    let owner = Owner::fresh();
    let req = ClaimRequest {
        key,
        owner,
        fingerprint: rec.fingerprint,
        lease: exec.op_timeout.max(std::time::Duration::from_secs(1)),
    };
    let claimed = exec.op(Op::Claim, key, || exec.store.claim(req)).await;
    if let Ok(Claim::Claimed { .. }) = claimed {
        let done = exec
            .op(Op::Complete, key, || {
                exec.store.complete(key, owner, &rec.payload, ttl)
            })
            .await;
        if let Err(e) = done {
            tracing::debug!(key, error = %e, "idem: front store copy failed");
        }
    }
}
