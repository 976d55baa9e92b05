//! The lock protocol over the execution layer:
//!
//! ```text
//! claim ──Claimed(fence)──> body(grant) under the watchdog ──> release (owner-checked)
//!   │  (fenced: the store's `claim`; unfenced: `claim_unfenced`, one native
//!   │   `SET … NX PX … GET` on Redis, and the body gets no fence)
//!   ├─Busy──> wait (local wake-up or backoff) and claim again, or LockBusy
//!   ├─Done──> the key holds a guard's finished record: Error::Config
//!   └─unavailable──> StoreUnavailable (a claim that may have applied is released)
//! ```

use std::future::Future;
use std::sync::Arc;

use super::{LockGrant, LockLease};
use crate::error::Error;
use crate::exec::{Acquired, Answer, ClaimSpec, Finish, Kind, Liveness};
use crate::fence::Fence;
use crate::fingerprint::Fingerprint;
use crate::handle::Idem;
use crate::key::Key;
use crate::observe::{self, CallOutcome, Op, Technique, instrument::Fenced};
use crate::policy::LockPolicy;
use crate::store::{Claim, ClaimRequest, Owner};

/// One lock call's fixed inputs.
pub(crate) struct Acquire<'a> {
    pub(crate) idem: &'a Idem,
    pub(crate) key: &'a Key,
    pub(crate) policy: &'a LockPolicy,
    /// Whether the body reads its fence. One that does not claims through
    /// [`Store::claim_unfenced`](crate::store::Store::claim_unfenced): on Redis
    /// one native command instead of the fence-stamping script, the same
    /// trade as the guard's `run` (issue 29).
    pub(crate) fenced: bool,
}

/// A lock call's result with the fence it ran under, for the span.
struct Locked<T, E> {
    result: Result<T, E>,
    fence: Option<Fence>,
}

impl<T, E> Fenced for Locked<T, E> {
    fn fence(&self) -> Option<Fence> {
        self.fence.filter(|_| self.result.is_ok())
    }
}

impl Acquire<'_> {
    /// The protocol inside the `idem` span (`technique = "lock"`), counted.
    pub(crate) async fn execute<T, E, B, Fut>(&self, body: B) -> Result<T, E>
    where
        E: From<Error>,
        B: FnOnce(LockGrant) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let recorder = &self.idem.inner.recorder;
        let locked = observe::instrument(recorder, Technique::Lock, self.key, || async {
            let (outcome, fence, result) = self.protocol(body).await;
            (outcome, Locked { result, fence })
        })
        .await;
        locked.result
    }

    async fn protocol<T, E, B, Fut>(&self, body: B) -> (CallOutcome, Option<Fence>, Result<T, E>)
    where
        E: From<Error>,
        B: FnOnce(LockGrant) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let key = self.key.as_str();
        let exec = &self.idem.inner.exec;
        if let Err(e) = self.policy.validate() {
            return (CallOutcome::Failed, None, Err(Error::Config(e).into()));
        }
        let lease = self.policy.lease;
        let owner = Owner::fresh();
        let spec = ClaimSpec {
            op: Op::Claim,
            kind: Kind::Record,
            key,
            owner,
            fingerprint: Fingerprint::NONE,
            lease,
            wait: self.policy.wait_budget(),
        };
        let req = ClaimRequest {
            key,
            owner,
            fingerprint: Fingerprint::NONE,
            lease,
        };
        let read = |claim| match claim {
            Claim::Claimed { fence } => Answer::Claimed(fence),
            Claim::Busy { remaining, .. } => Answer::Busy(remaining),
            Claim::Done(_) => Answer::Stop(()),
        };
        // Unlike a guarded call, a lock protects only the code in its body, and a
        // dropped body runs no more: the claim stays armed while the body runs,
        // so a caller dropped then gives the lock up at once (owner-checked).
        let fenced = self.fenced;
        let send = || exec.send_claim(fenced, req);
        let mut claimed = match exec.acquire(spec, send, read).await {
            Acquired::Held(c) => c,
            Acquired::Stopped { .. } => {
                let e = Error::Config(format!(
                    "lock key `{key}` holds a finished idempotency record: \
                     give locks a scene of their own (e.g. `lock:...`)"
                ));
                return (CallOutcome::Failed, None, Err(e.into()));
            }
            Acquired::Busy { .. } => {
                let e = Error::LockBusy {
                    key: key.to_owned(),
                };
                return (CallOutcome::LockBusy, None, Err(e.into()));
            }
            // `pending` releases a claim that got no answer, as this call ends.
            Acquired::Failed { error, .. } => {
                let e = self.idem.store_error(key, error);
                return (CallOutcome::Failed, None, Err(e.into()));
            }
        };
        let held = claimed.held;
        // Local contenders wait on `claimed` instead of polling (dropped last,
        // after the release, so the first one woken finds the key free).
        let live = Arc::new(Liveness::new(held.sent, lease));
        // An unfenced body never sees the grant's fence (`run_unfenced` hands
        // it the lease alone, the macro has no cell to set), so the grant
        // carries whatever the claim did; only the span must not show it.
        let grant = LockGrant {
            fence: held.fence,
            lease: LockLease {
                live: Arc::clone(&live),
            },
        };
        let result = exec
            .hold_tracked(&held, self.policy.max_hold(), Some(&live), body(grant))
            .await;
        // `finish` goes on in the background if this future is dropped from here.
        claimed.disarm();
        if let Err(e) = exec.finish(&held, Finish::Release).await {
            // The lock lapses with its lease; the body's result stands.
            tracing::warn!(key = %crate::observe::key_hash(key), error = %e, "lock release failed; it lapses with its lease");
        }
        let outcome = if result.is_ok() {
            CallOutcome::Executed
        } else {
            CallOutcome::Released
        };
        (outcome, fenced.then_some(held.fence), result)
    }
}
