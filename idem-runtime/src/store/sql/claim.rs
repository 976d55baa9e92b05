//! A claim through one store instance: the local answers first (`local.rs`),
//! then one statement per key at a time, run to its end even if the caller goes.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::store::SqlStore;
use crate::policy::MAX_DURATION;
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
/// not the caller still waits for it: a statement that may apply keeps the
/// turn until it answers, so what the caller's drop sets off (an undo, a
/// give-back, a retry) queues behind it. Used by the claim and by a token's
/// take.
///
/// The caller polls `work` itself while it waits; only a caller dropped
/// before the end hands the rest to a task of its own ([`Finish`]). Spawning
/// it up front cost every claim a task hop and a cross-thread wake-up: a
/// third of a PostgreSQL duplicate's time at one caller (issue 29).
pub(super) fn finish_in_turn<T: Send + 'static>(
    what: &'static str,
    work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
) -> impl Future<Output = Result<T, StoreError>> {
    Finish {
        what,
        work: Some(Box::pin(work)),
    }
}

/// `work` polled in place, its rest spawned if this is dropped unfinished. A
/// panic in it is the caller's `StoreError::Unavailable`, as a panicked task
/// was.
struct Finish<F: Future + Send + 'static>
where
    F::Output: Send,
{
    what: &'static str,
    work: Option<Pin<Box<F>>>,
}

impl<T, F> Future for Finish<F>
where
    T: Send + 'static,
    F: Future<Output = Result<T, StoreError>> + Send + 'static,
{
    type Output = Result<T, StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let what = self.what;
        let Some(work) = self.work.as_mut() else {
            return Poll::Ready(Err(StoreError::unavailable(format!(
                "{what} polled after it ended"
            ))));
        };
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| work.as_mut().poll(cx)));
        let out = match polled {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(out)) => out,
            Err(_) => Err(StoreError::unavailable(format!(
                "{what} task failed: panicked"
            ))),
        };
        self.work = None;
        Poll::Ready(out)
    }
}

impl<F: Future + Send + 'static> Drop for Finish<F>
where
    F::Output: Send,
{
    fn drop(&mut self) {
        // Unfinished: the statement may still apply, so it keeps the key's
        // turn to its end. Outside a runtime (its shutdown) nothing can run it.
        if let Some(work) = self.work.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(work);
        }
    }
}
