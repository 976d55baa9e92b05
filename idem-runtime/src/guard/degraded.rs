//! `degrade = "backstop"`: the store is unavailable, the body runs unguarded and
//! the business constraint decides. The fence is `Fence::NONE` and nothing is
//! stored.
//!
//! Cost: every degraded call runs its body, so a key called N times during an
//! outage runs N bodies and the constraint stops N − 1 of them (146
//! body runs for 50 keys). With `degrade_local` the first caller of a key in this
//! process takes an in-process claim (the execution layer's local registry, the
//! one that wakes same-process waiters on the guarded path); its same-process
//! duplicates wait for it and receive its value, so a process runs one body per
//! key at a time. Across processes the constraint is still the only guard.
//!
//! A claim the call sent into the outage may still apply when the network heals
//! (a black hole delivers it): it is settled in the background once the body has
//! ended (completed with the body's value, or released), instead of holding the
//! key for a whole lease after the heal.
//!
//! Counting: a call whose body ran here is `degraded`, whatever the body did; if
//! the constraint stopped it, it is also a backstop hit (path `degraded`). A
//! duplicate that received a local holder's value is `waited`.

use std::future::Future;

use serde::{Serialize, de::DeserializeOwned};
use tokio::time::Instant;

use super::engine::{Call, Step};
use super::replay::{encode_ok, handed, mismatch};
use crate::error::Error;
use crate::exec::{Finish, Inflight};
use crate::fence::Fence;
use crate::fingerprint::Fingerprint;
use crate::hooks::{Hooks, OnConflict};
use crate::observe::{CallOutcome, Verdict};
use crate::outcome::{How, Outcome};
use crate::store::Owner;

impl Call<'_> {
    /// The degraded path; `fp` is the call's request fingerprint (a same-process
    /// duplicate with another payload gets `PayloadMismatch`), `sent` the owner of
    /// the claim it sent without an answer, if any.
    pub(super) async fn degraded<T, E, C, B, Fut>(
        &self,
        fp: Fingerprint,
        sent: Option<Owner>,
        hooks: Hooks<E, C>,
        body: B,
    ) -> Step<T, E>
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        C: OnConflict<T, E>,
        B: FnOnce(Fence) -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        let (verdict, r) = self.degraded_call(fp, hooks, body).await;
        if let Some(owner) = sent {
            let (key, policy) = (self.key.as_str(), self.policy);
            let finish = match r
                .as_ref()
                .ok()
                .map(|o| encode_ok(key, policy.version, o.value()))
            {
                // The claim got no answer: its fence is unknown.
                Some(Ok(payload)) => Finish::Complete {
                    payload,
                    ttl: policy.ttl,
                    taken: None,
                },
                _ => Finish::Release,
            };
            self.idem
                .inner
                .exec
                .settle_detached(key, owner, policy.lease, finish);
        }
        (verdict, r)
    }

    async fn degraded_call<T, E, C, B, Fut>(
        &self,
        fp: Fingerprint,
        hooks: Hooks<E, C>,
        body: B,
    ) -> Step<T, E>
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        C: OnConflict<T, E>,
        B: FnOnce(Fence) -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        let key = self.key.as_str();
        tracing::warn!(
            key = %crate::observe::key_hash(key),
            "store unavailable: running under the backstop only"
        );
        if !self.policy.degrade_local {
            return self.run_degraded(None, hooks, body).await;
        }
        let exec = &self.idem.inner.exec;
        let started = Instant::now();
        let budget = self.policy.wait_budget();
        loop {
            let slot = match exec.local_turn(key, fp) {
                Ok(holder) => return self.run_degraded(Some(&holder), hooks, body).await,
                Err(slot) => slot,
            };
            if slot.fingerprint().conflicts_with(&fp) {
                let e = mismatch(key, slot.fingerprint(), fp);
                return (CallOutcome::Mismatch.into(), Err(e.into()));
            }
            let left = budget.saturating_sub(started.elapsed());
            if left.is_zero() {
                let e = Error::InProgress {
                    key: key.to_owned(),
                    waited: started.elapsed(),
                    lease_left: None,
                };
                return (CallOutcome::InProgress.into(), Err(e.into()));
            }
            if exec.wait_slot(key, &slot, left).await
                && let Some(payload) = slot.handed()
            {
                let r = handed(key, self.policy.version, payload)
                    .map(|v| Outcome::new(v, How::Waited, Fence::NONE).with_stored(false));
                return match r {
                    Ok(out) => (CallOutcome::Waited.into(), Ok(out)),
                    Err(e) => (CallOutcome::Failed.into(), Err(e.into())),
                };
            }
            // The holder failed (its body's error is not handed over): one waiter
            // takes the key and runs, the fail-then-retry rule. Or the wait ran
            // out: the next turn reports `InProgress`.
        }
    }

    /// Runs the body with no store; `holder` is this call's in-process claim,
    /// which hands the value (or the one `on_conflict` loaded) to local waiters.
    async fn run_degraded<T, E, C, B, Fut>(
        &self,
        holder: Option<&Inflight<'_>>,
        hooks: Hooks<E, C>,
        body: B,
    ) -> Step<T, E>
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        C: OnConflict<T, E>,
        B: FnOnce(Fence) -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        let (verdict, r) = match body(Fence::NONE).await {
            Ok(v) => {
                let out = Outcome::new(v, How::Degraded, Fence::NONE).with_stored(false);
                (Verdict::degraded(false), Ok(out))
            }
            Err(err) => match self.backstop_hit(&err, hooks.detect).await {
                Some(Ok(c)) => {
                    let (_, r) = self.after_backstop(None, c, hooks.on_conflict, err).await;
                    (Verdict::degraded(true), r)
                }
                Some(Err(wrong)) => (Verdict::degraded(false), Err(wrong.into())),
                None => (Verdict::degraded(false), Err(err)),
            },
        };
        if let (Some(h), Ok(out)) = (holder, &r)
            && let Ok(payload) = encode_ok(self.key.as_str(), self.policy.version, out.value())
        {
            h.hand_over(payload);
        }
        (verdict, r)
    }
}
