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
//! dropped mid-way, so the ordinary path costs no spawn.

use std::sync::Arc;
use std::time::Duration;

use super::Exec;
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
    /// Completes or releases a held claim. If the caller's future is dropped while
    /// the operation is in flight, the same operation is sent again from a detached
    /// task (it is idempotent per owner), within its own operation budget.
    pub(crate) async fn finish(
        self: &Arc<Self>,
        key: &str,
        owner: Owner,
        finish: Finish,
    ) -> Result<Owned, StoreError> {
        let mut pending = Detach {
            exec: self,
            key,
            owner,
            finish: &finish,
            armed: true,
        };
        let r = self.finish_now(key, owner, &finish).await;
        pending.armed = false;
        r
    }

    async fn finish_now(&self, key: &str, owner: Owner, f: &Finish) -> Result<Owned, StoreError> {
        match f {
            Finish::Complete { payload, ttl } => {
                self.op(Op::Complete, key, || {
                    self.store.complete(key, owner, payload, *ttl)
                })
                .await
            }
            Finish::Release => {
                self.op(Op::Release, key, || self.store.release(key, owner))
                    .await
            }
        }
    }
}

/// Re-sends an unfinished `finish` from a detached task when dropped.
struct Detach<'a> {
    exec: &'a Arc<Exec>,
    key: &'a str,
    owner: Owner,
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
                key = self.key,
                "caller dropped outside a runtime: the claim lapses with its lease"
            );
            return;
        };
        let exec = Arc::clone(self.exec);
        let key = self.key.to_owned();
        let owner = self.owner;
        rt.spawn(async move {
            if let Err(e) = exec.finish_now(&key, owner, &finish).await {
                tracing::warn!(key, error = %e, "detached finish failed; the claim lapses with its lease");
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
    armed: bool,
}

impl<'a> ReleaseOnDrop<'a> {
    pub(crate) fn new(exec: &'a Arc<Exec>, key: &'a str, owner: Owner) -> Self {
        ReleaseOnDrop {
            exec,
            key,
            owner,
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
        let owner = self.owner;
        rt.spawn(async move {
            let _ = exec
                .op(Op::Release, &key, || exec.store.release(&key, owner))
                .await;
        });
    }
}
