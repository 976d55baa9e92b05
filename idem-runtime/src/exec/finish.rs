//! Ending a held claim in a way no caller can interrupt.
//!
//! Two rules from the guard's semantics (DESIGN §3, rule 8) meet here:
//! - a claim whose body never started is released when the call is dropped
//!   ([`ReleaseOnDrop`]), so a cancelled caller does not block the key for a lease;
//! - once the body has a result (or an error that releases the claim), storing it
//!   must not depend on the caller still listening ([`Exec::finish`]): a client
//!   timeout at that moment used to store nothing, the claim lapsed, and the retry
//!   ran the body again although the encoded result was in hand (issue 10, §A2).
//!
//! Both hand the operation to a detached task only when the caller's future is
//! dropped mid-way or the store did not answer in time, so the ordinary path
//! costs no spawn.

use std::sync::Arc;
use std::time::Duration;

use super::{Exec, Held};
use crate::observe::Op;
use crate::store::{Owned, Owner, StoreError};

/// How a held claim ends.
#[derive(Debug, Clone)]
pub(crate) enum Finish {
    /// Store the encoded result for `ttl`.
    Complete { payload: Vec<u8>, ttl: Duration },
    /// Give the key up so a retry runs.
    Release,
}

impl Exec {
    /// Completes or releases a held claim within the call's operation budget.
    ///
    /// If the store does not confirm it in time, or the caller's future is dropped
    /// while the operation is in flight, the same operation goes on in a detached
    /// task (it is idempotent per owner) until the lease would have lapsed anyway:
    /// a slow but healthy store then still gets the result, so a retry replays it
    /// instead of running the body again, while the caller waits no longer than one
    /// operation budget. Once the store answered (applied, or the key is another
    /// owner's) there is nothing left to do.
    pub(crate) async fn finish(
        self: &Arc<Self>,
        held: &Held<'_>,
        finish: Finish,
    ) -> Result<Owned, StoreError> {
        let mut pending = Detach {
            exec: self,
            held,
            finish: &finish,
            armed: true,
        };
        let r = self
            .finish_now(held.key, held.owner, held.budget, &finish)
            .await;
        pending.armed = matches!(r, Err(StoreError::Unavailable(_)));
        r
    }

    /// A finish nobody waits for: worth trying for as long as the claim can still
    /// be ours (one lease), as one patient operation ([`Exec::op_patient`]) that
    /// keeps its place in a slow store's queue, but not while the breaker says the
    /// store is down (the claim then lapses with its lease, and retries would only
    /// add load to a store that is struggling).
    async fn in_background(
        &self,
        key: &str,
        owner: Owner,
        lease: Duration,
        f: &Finish,
    ) -> Result<Owned, StoreError> {
        let budget = lease.max(self.op_timeout);
        match f {
            Finish::Complete { payload, ttl } => {
                self.op_patient(Op::Complete, key, budget, || {
                    self.store.complete(key, owner, payload, *ttl)
                })
                .await
            }
            Finish::Release => {
                self.op_patient(Op::Release, key, budget, || self.store.release(key, owner))
                    .await
            }
        }
    }

    async fn finish_now(
        &self,
        key: &str,
        owner: Owner,
        budget: Duration,
        f: &Finish,
    ) -> Result<Owned, StoreError> {
        match f {
            Finish::Complete { payload, ttl } => {
                self.op_in(Op::Complete, key, budget, || {
                    self.store.complete(key, owner, payload, *ttl)
                })
                .await
            }
            Finish::Release => {
                self.op_in(Op::Release, key, budget, || self.store.release(key, owner))
                    .await
            }
        }
    }
}

impl Exec {
    /// Settles, in a detached task, a claim this call sent but never got an answer
    /// for, once whatever the call ran without it has ended: the claim may still
    /// apply (a black hole delivers it when the network heals) and would then hold
    /// the key for a whole lease after the outage (issue 19). `Complete` stores
    /// the value the degraded body produced, so a retry replays it; `Release`
    /// frees the key. Both are owner-checked: a claim that never applied, or a key
    /// someone else holds, is left alone. Tried for as long as the claim can
    /// matter (its lease) unless the breaker says the store is down.
    pub(crate) fn settle_detached(
        self: &Arc<Self>,
        key: &str,
        owner: Owner,
        lease: Duration,
        f: Finish,
    ) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let exec = Arc::clone(self);
        let key = key.to_owned();
        rt.spawn(async move {
            let _ = exec.in_background(&key, owner, lease, &f).await;
        });
    }
}

/// Goes on with an unconfirmed `finish` in a detached task when dropped armed.
struct Detach<'a> {
    exec: &'a Arc<Exec>,
    held: &'a Held<'a>,
    finish: &'a Finish,
    armed: bool,
}

impl Drop for Detach<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // Only on a drop mid-operation: the payload is copied once for the task.
        let finish = self.finish.clone();
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                key = %crate::observe::key_hash(self.held.key),
                "caller dropped outside a runtime: the claim lapses with its lease"
            );
            return;
        };
        let exec = Arc::clone(self.exec);
        let key = self.held.key.to_owned();
        let (owner, lease) = (self.held.owner, self.held.lease);
        rt.spawn(async move {
            if let Err(e) = exec.in_background(&key, owner, lease, &finish).await {
                tracing::warn!(key = %crate::observe::key_hash(&key), error = %e, "detached finish failed; the claim lapses with its lease");
            }
        });
    }
}

/// Releases a claim whose body never started when the call is dropped. Armed
/// before the claim is sent: a caller cancelled while the claim is in flight still
/// releases it (release is owner-checked, so a claim that never applied is
/// untouched).
pub(crate) struct ReleaseOnDrop<'a> {
    exec: &'a Arc<Exec>,
    key: &'a str,
    owner: Owner,
    lease: Duration,
    armed: bool,
}

impl<'a> ReleaseOnDrop<'a> {
    pub(crate) fn new(exec: &'a Arc<Exec>, key: &'a str, owner: Owner, lease: Duration) -> Self {
        ReleaseOnDrop {
            exec,
            key,
            owner,
            lease,
            armed: true,
        }
    }

    /// The claim must stay: it is held by a body that started (its effects may
    /// commit, so it lapses with its lease), finished by `finish`, or was never
    /// taken.
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for ReleaseOnDrop<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let exec = Arc::clone(self.exec);
        let key = self.key.to_owned();
        // A claim that may have applied blocks the key for a lease: worth trying to
        // release for that long (a single attempt lost to a blip left callers
        // waiting out 30 s leases under load: issue 18).
        let (owner, lease) = (self.owner, self.lease);
        rt.spawn(async move {
            let _ = exec
                .in_background(&key, owner, lease, &Finish::Release)
                .await;
        });
    }
}
