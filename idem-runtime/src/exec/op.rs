//! One store operation: breaker check, timeout, retries with the same owner,
//! timing and error counts.

use std::time::Duration;

use tokio::time::Instant;

use super::Exec;
use crate::observe::Op;
use crate::store::{BoxFuture, StoreError};

impl Exec {
    /// Runs one store operation (every operation is idempotent per owner, so
    /// retrying it after a lost reply is safe).
    ///
    /// The breaker spares *new* calls the timeout during an outage. Operations on a
    /// claim the caller already holds ([`Op::holds_claim`]: renew, complete,
    /// release) are not gated by it: refusing them would let a running body's lease
    /// lapse, or drop its result, for a whole cooldown after a blip the store has
    /// long recovered from, and a duplicate would then run the body again
    /// (simulation seed 547). Their outcome still feeds the breaker. For the same
    /// reason they retry for their whole budget, where a claim gives up after three
    /// quick attempts: a `complete` lost to a 50 ms blip means the next duplicate
    /// runs the body again (simulation seed 121).
    ///
    /// Only `StoreError::Unavailable` counts as a failure of the store; an input
    /// the store refuses or a record it cannot decode is an answer, not an outage.
    pub(crate) async fn op<'s, R>(
        &'s self,
        op: Op,
        key: &str,
        f: impl FnMut() -> BoxFuture<'s, Result<R, StoreError>>,
    ) -> Result<R, StoreError> {
        self.op_in(op, key, self.op_timeout, f).await
    }

    /// [`op`](Self::op) within `budget` instead of the handle's `op_timeout` (a
    /// call whose lease needs shorter operations, see `Policy::op_budget`).
    pub(crate) async fn op_in<'s, R>(
        &'s self,
        op: Op,
        key: &str,
        budget: Duration,
        f: impl FnMut() -> BoxFuture<'s, Result<R, StoreError>>,
    ) -> Result<R, StoreError> {
        self.op_with(op, key, budget, false, f).await
    }

    /// An operation on a held claim that nobody waits for (a detached finish): one
    /// attempt may take the whole `budget`, and failed attempts are retried within
    /// it until the breaker opens. A slow store runs requests in the order they
    /// arrive (SQLite's writer turn, a pool's queue): an attempt dropped at a short
    /// timeout leaves that queue before it applies, and its retry joins at the back
    /// again, behind the late claim it was meant to undo (issue 18, SQLite
    /// simulation under load: such an orphan held its key for a whole lease).
    pub(crate) async fn op_patient<'s, R>(
        &'s self,
        op: Op,
        key: &str,
        budget: Duration,
        f: impl FnMut() -> BoxFuture<'s, Result<R, StoreError>>,
    ) -> Result<R, StoreError> {
        debug_assert!(
            op.holds_claim(),
            "only a held claim's operations run detached"
        );
        self.op_with(op, key, budget, true, f).await
    }

    async fn op_with<'s, R>(
        &'s self,
        op: Op,
        key: &str,
        budget: Duration,
        background: bool,
        mut f: impl FnMut() -> BoxFuture<'s, Result<R, StoreError>>,
    ) -> Result<R, StoreError> {
        let held = op.holds_claim();
        if !held && !self.breaker.allow() {
            return Err(StoreError::Unavailable("circuit breaker open".into()));
        }
        let mut t0 = Instant::now();
        let deadline = t0 + budget;
        let mut attempt = 0u32;
        loop {
            if attempt > 0 {
                t0 = Instant::now();
            }
            let r = match tokio::time::timeout_at(deadline, f()).await {
                Ok(r) => r,
                Err(_) => Err(StoreError::unavailable(format!(
                    "no answer within {budget:?}"
                ))),
            };
            self.store_ops
                .record(op, t0.elapsed().as_secs_f64(), r.is_ok());
            match r {
                Ok(v) => {
                    self.breaker.success();
                    return Ok(v);
                }
                Err(StoreError::Unavailable(msg)) => {
                    attempt += 1;
                    let pause = Duration::from_millis(5 << attempt.min(4));
                    // In the background the breaker says when the store is down
                    // rather than slow: retrying then only adds load, and the claim
                    // lapses with its lease.
                    let give_up = (!held && attempt >= 3) || (background && self.breaker.is_open());
                    if give_up || Instant::now() + pause >= deadline {
                        self.breaker.failure();
                        tracing::debug!(key = %crate::observe::key_hash(key), op = op.as_str(), error = %msg, "store unavailable");
                        return Err(StoreError::Unavailable(msg));
                    }
                    tokio::time::sleep(self.jitter.apply(pause)).await;
                }
                Err(other) => return Err(other),
            }
        }
    }
}
