//! A claim through one store instance: the local answers first (`local.rs`),
//! then one statement per key at a time, run to its end even if the caller goes.

use std::future::Future;

use super::store::SqlStore;
use crate::policy::MAX_DURATION;
use crate::sql_kernel::tx::{Panicked, run_to_end};
use crate::store::{Claim, ClaimRequest, StoreError};

impl SqlStore {
    pub(super) async fn claim_in_turn(&self, req: ClaimRequest<'_>) -> Result<Claim, StoreError> {
        super::key::check_key(self.dialect, req.key)?;
        // See `local.rs`: local duplicates of a claim granted here need no round trip.
        if let Some(answer) = self.local.answer(req.key, req.owner) {
            return Ok(answer);
        }
        let arrived = std::time::Instant::now();
        let one_at_a_time = self.locks.lock(req.key).await;
        if let Some(answer) = self.local.answer(req.key, req.owner) {
            return Ok(answer);
        }
        if let Some(rec) = one_at_a_time.done_since(arrived) {
            return Ok(Claim::Done(rec));
        }
        // The statement, and what this instance learns from its answer, run in
        // a task of their own that keeps the key's turn: a caller dropped
        // mid-claim (a cancelled request, an attempt past its timeout) leaves
        // a statement that may still apply, and its undo (or the retry) must
        // queue behind it and find it here. Sent beside it, the undo's own
        // claim could apply first and be released before the first one
        // applied, which then held the key for a whole lease.
        let store = self.clone();
        let key = req.key.to_owned();
        let (owner, fingerprint, lease) = (req.owner, req.fingerprint, req.lease);
        finish_in_turn("claim", async move {
            let mut one_at_a_time = one_at_a_time;
            let req = ClaimRequest {
                key: &key,
                owner,
                fingerprint,
                lease,
            };
            let sent = std::time::Instant::now();
            let claim = dispatch!(&store.pool, |p, m| m::claim(
                p,
                &store.sql,
                &store.sent,
                req
            )
            .await)?;
            if let Claim::Claimed { fence } = claim {
                let until = sent + lease.min(MAX_DURATION);
                store.local.hold(&key, owner, fence, fingerprint, until);
            }
            one_at_a_time.remember(sent, &claim);
            Ok(claim)
        })
        .await
    }
}

/// Runs `work`, which owns a key's turn (`KeyGuard`), to its end whether or
/// not the caller still waits for it ([`run_to_end`]): a statement that may
/// apply keeps the turn until it answers, so what the caller's drop sets off
/// (an undo, a give-back, a retry) queues behind it. Used by the claim and by
/// a token's take.
pub(super) async fn finish_in_turn<T: Send + 'static>(
    what: &str,
    work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
) -> Result<T, StoreError> {
    run_to_end(work).await.unwrap_or_else(|Panicked| {
        Err(StoreError::unavailable(format!(
            "{what} task failed: panicked"
        )))
    })
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use std::sync::Arc;

    use super::SqlStore;

    /// A claim clones its store into the task that runs it to the end, so a
    /// clone must share the statement texts and table names, not copy them
    /// (by value it copied every statement of every table per claim).
    #[tokio::test]
    async fn a_clone_shares_the_statement_texts() {
        let pool = sqlx::SqlitePool::connect_lazy("sqlite::memory:").unwrap();
        let store = SqlStore::sqlite(pool);
        let clone = store.clone();
        assert!(Arc::ptr_eq(&store.sql, &clone.sql));
        assert!(Arc::ptr_eq(&store.tok, &clone.tok));
        assert!(Arc::ptr_eq(&store.sets, &clone.sets));
        assert!(Arc::ptr_eq(&store.names, &clone.names));
    }
}
