//! The guard protocol: claim or read, wait or reject, run with lease renewal,
//! complete or release. Both the macros and the non-macro builder end here; the
//! store operations, the lease watchdog and the detached finish come from
//! [`exec`](crate::exec), the span and counters from [`observe`](crate::observe).
//!
//! ```text
//! claim ──Claimed(fence)──> run body (watchdog renews every lease/3, up to max_hold)
//!   │                        ├─ Ok            -> complete(result, ttl)      -> Executed (or NotStored)
//!   │                        ├─ Err terminal  -> complete(error, ttl)       -> Err (replayed later)
//!   │                        ├─ Err backstop  -> on_conflict -> complete    -> Backstop
//!   │                        └─ Err           -> release                    -> Err
//!   ├─Done(record)──> fingerprint check -> decode -> Replayed
//!   ├─Busy──> reject: InProgress | wait: sleep or local wake-up, claim again
//!   └─unavailable──> StoreUnavailable, or degrade: run body, backstop decides
//!                    (degrade_local: one body per key in this process, others wait)
//! ```

use std::future::Future;

use serde::{Serialize, de::DeserializeOwned};

use super::replay::{mismatch, replay};
use crate::error::Error;
use crate::exec::{Acquired, Answer, ClaimSpec, Kind};
use crate::fence::Fence;
use crate::fingerprint::Fingerprint;
use crate::handle::Idem;
use crate::hooks::{Hooks, OnConflict};
use crate::key::Key;
use crate::observe::{self, CallOutcome, Op, Technique, Verdict};
use crate::outcome::{How, Outcome};
use crate::policy::Policy;
use crate::store::{Claim, ClaimRequest, Owner, StoreError};

/// One call's fixed inputs, shared by the engine's steps.
pub(crate) struct Call<'a> {
    pub(crate) idem: &'a Idem,
    pub(crate) key: &'a Key,
    pub(crate) policy: &'a Policy,
    pub(crate) technique: Technique,
    /// Whether the body reads its fence. A body that does not (no `idem::Fence`
    /// parameter, [`Guard::run`](super::Guard::run)) claims
    /// through [`Store::claim_unfenced`](crate::store::Store::claim_unfenced): on
    /// Redis one native command instead of a script, and the body then
    /// receives [`Fence::NONE`].
    pub(crate) fenced: bool,
}

/// What a step of the protocol hands back: how the call is counted (its outcome
/// label, and whether the constraint caught a duplicate) and the result.
pub(super) type Step<T, E> = (Verdict, Result<Outcome<T>, E>);

impl Call<'_> {
    /// The protocol inside the `idem` span, counted. Not an `async fn`: its
    /// arguments would be stored in its future beside the protocol's own copy.
    pub(crate) fn execute<T, E, C, B, Fut>(
        &self,
        fingerprint: Result<Fingerprint, String>,
        hooks: Hooks<E, C>,
        body: B,
    ) -> impl Future<Output = Result<Outcome<T>, E>>
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        C: OnConflict<T, E>,
        B: FnOnce(Fence) -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        let call = move || self.protocol(fingerprint, hooks, body);
        observe::instrument(&self.idem.inner.recorder, self.technique, self.key, call)
    }

    async fn protocol<T, E, C, B, Fut>(
        &self,
        fingerprint: Result<Fingerprint, String>,
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
        let exec = &self.idem.inner.exec;
        if let Err(e) = self.check(hooks.detect.is_some()) {
            return (CallOutcome::Failed.into(), Err(e.into()));
        }
        let fp = match fingerprint {
            Ok(fp) => fp,
            Err(e) => return (CallOutcome::Failed.into(), Err(Error::codec(key, e).into())),
        };
        if self.idem.is_disabled() {
            // Boxed: a cold path kept out of every call's future.
            return Box::pin(unguarded(body)).await;
        }
        let owner = Owner::fresh();
        let spec = ClaimSpec {
            op: Op::Claim,
            kind: Kind::Record,
            key,
            owner,
            fingerprint: fp,
            lease: self.policy.lease,
            wait: self.policy.wait_budget(),
        };
        let req = ClaimRequest {
            key,
            owner,
            fingerprint: fp,
            lease: self.policy.lease,
        };
        let fenced = self.fenced;
        let send = || exec.send_claim(fenced, req);
        let read = |claim| match claim {
            Claim::Claimed { fence } => Answer::Claimed(fence),
            Claim::Done(rec) => Answer::Stop(Err(rec)),
            Claim::Busy {
                fingerprint,
                remaining,
            } => {
                if fingerprint.conflicts_with(&fp) {
                    Answer::Stop(Ok(fingerprint))
                } else {
                    Answer::Busy(remaining)
                }
            }
        };
        let mut claimed = match exec.acquire(spec, send, read).await {
            Acquired::Held(c) => c,
            Acquired::Stopped {
                answer: Err(rec),
                waited,
            } => {
                if rec.fingerprint.conflicts_with(&fp) {
                    let e = mismatch(key, rec.fingerprint, fp);
                    return (CallOutcome::Mismatch.into(), Err(e.into()));
                }
                let how = if waited { How::Waited } else { How::Replayed };
                let r = replay(key, self.policy.version, &rec, how, hooks.terminal);
                return (CallOutcome::from(how).into(), r);
            }
            Acquired::Stopped {
                answer: Ok(theirs), ..
            } => {
                let e = mismatch(key, theirs, fp);
                return (CallOutcome::Mismatch.into(), Err(e.into()));
            }
            Acquired::Busy { waited, lease_left } => {
                let e = Error::InProgress {
                    key: key.to_owned(),
                    waited,
                    lease_left: Some(lease_left),
                };
                return (CallOutcome::InProgress.into(), Err(e.into()));
            }
            Acquired::Failed {
                error,
                sent,
                mut pending,
            } => {
                if matches!(error, StoreError::Unavailable(_)) && self.policy.degrade {
                    // The body starts now and its effects may commit: a claim that
                    // did apply must not be released while it runs, for a duplicate
                    // to run the body again (rule 8, §A5). Once it has ended, the
                    // degraded path settles a claim that was sent.
                    pending.disarm();
                    let sent = sent.then_some(owner);
                    // Boxed: a cold path kept out of every call's future.
                    return Box::pin(self.degraded(fp, sent, hooks, body)).await;
                }
                // `pending` undoes a claim that was sent, as this call ends.
                return (
                    CallOutcome::Failed.into(),
                    Err(self.idem.store_error(key, error).into()),
                );
            }
        };

        // We hold the key (local duplicates wait on it instead of polling). From
        // now on the body's effects may commit: a drop leaves the claim to lapse.
        claimed.disarm();
        let held = claimed.held;
        // Boxed: the body, its lease watchdog and the finish are most of the
        // call's state, and a duplicate (the common case) never reaches them. Held
        // inline they made every call's future 4 kB, copied once per layer
        // between the caller and here (a memory-store profile).
        Box::pin(async move {
            let result = exec
                .hold(&held, self.policy.max_hold(), body(held.fence))
                .await;
            self.after_body(&held, result, hooks).await
        })
        .await
    }

    /// The settings, and a backstop that can actually be detected.
    fn check(&self, can_detect: bool) -> Result<(), Error> {
        self.policy.validate().map_err(Error::Config)?;
        if let Some(b) = &self.policy.backstop {
            if !can_detect {
                return Err(Error::Config(format!(
                    "backstop `{b}` is declared but the call cannot detect its violations: \
                     use `run_with(Hooks::new().detect(idem::std_error), ..)` (or a detect \
                     function for your error type)"
                )));
            }
            self.idem.note_backstop(b);
        }
        Ok(())
    }
}

/// The guard is off (`IdemBuilder::disabled`): the body runs as if unguarded,
/// nothing is claimed or stored, and the call is counted as `unguarded`
/// whatever the body returns, so the series shows every call it let through.
async fn unguarded<T, E, B, Fut>(body: B) -> Step<T, E>
where
    B: FnOnce(Fence) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let out = body(Fence::NONE)
        .await
        .map(|v| Outcome::new(v, How::Unguarded, Fence::NONE).with_stored(false));
    (CallOutcome::Unguarded.into(), out)
}
