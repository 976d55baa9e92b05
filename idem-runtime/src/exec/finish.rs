//! Ending a held claim in a way no caller can interrupt.
//!
//! Two rules from the guard's semantics (DESIGN §3, rule 8) meet here:
//! - a claim whose body never started is released when the call is dropped
//!   ([`ReleaseOnDrop`]), so a cancelled caller does not block the key for a lease;
//! - once the body has a result (or an error that releases the claim), storing it
//!   must not depend on the caller still listening ([`Exec::finish`]): a client
//!   timeout at that moment used to store nothing, the claim lapsed, and the retry
//!   ran the body again although the encoded result was in hand.
//!
//! Both hand the operation to a detached task only when the caller's future is
//! dropped mid-way or the store did not answer in time, so the ordinary path
//! costs no spawn.

use std::sync::Arc;
use std::time::Duration;

use super::{Exec, Held};
use crate::fingerprint::Fingerprint;
use crate::observe::Op;
use crate::store::token::TokenTake;
use crate::store::{BoxFuture, Claim, ClaimRequest, Owned, Owner, StoreError, Taken};

/// What kind of claim is held: decides its renewal, its undo and its finishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A record claim in the record store (guards, locks).
    Record,
    /// A one-time token taken in the token store.
    Token,
}

/// How a held claim ends: every way goes through [`Exec::finish`].
#[derive(Debug, Clone)]
pub(crate) enum Finish {
    /// Store the encoded result for `ttl`; `taken` describes the claim when
    /// the holder knows it (`Store::complete_taken`).
    Complete {
        payload: Vec<u8>,
        ttl: Duration,
        taken: Option<Taken>,
    },
    /// Give the key up so a retry runs (a guard's failed body, a lock's end).
    Release,
    /// Return a spent token to issued: its body failed (or never started), a
    /// retry may use it. A body that succeeded needs no finish: its take
    /// spent the token.
    TokenGiveBack,
}

impl Finish {
    /// How a claim of `kind` whose body never started is undone.
    fn undo(kind: Kind) -> Finish {
        match kind {
            Kind::Record => Finish::Release,
            Kind::Token => Finish::TokenGiveBack,
        }
    }

    fn op(&self) -> Op {
        match self {
            Finish::Complete { .. } => Op::Complete,
            Finish::Release => Op::Release,
            Finish::TokenGiveBack => Op::TokenReturn,
        }
    }
}

impl Exec {
    /// Ends a held claim (every [`Finish`]) within the call's operation budget.
    ///
    /// If the store does not confirm it in time, or the caller's future is dropped
    /// while the operation is in flight, the same operation goes on in a detached
    /// task (it is idempotent per owner) until the lease would have lapsed anyway:
    /// a slow but healthy store then still gets the result, so a retry replays it
    /// instead of running the body again (or finds a failed body's token given
    /// back), while the
    /// caller waits no longer than one operation budget. Once the store answered
    /// (applied, or the key is another owner's) there is nothing left to do.
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
            .finish_op(held.key, held.owner, held.budget, &finish, false)
            .await;
        pending.armed = matches!(r, Err(StoreError::Unavailable(_)));
        r
    }

    /// A finish nobody waits for: worth trying for as long as the claim can still
    /// be ours (one lease), as one patient operation ([`Exec::op_patient`]) that
    /// keeps its place in a slow store's queue. While the breaker says the store
    /// is down, a finish whose lapse would run the body again (a `complete`)
    /// waits the breaker out without sending; the others stop and leave the
    /// claim to lapse with its lease (a token stays spent), as retries would only add
    /// load to a store that is struggling (`Op::outlasts_open_breaker`).
    async fn in_background(
        &self,
        key: &str,
        owner: Owner,
        lease: Duration,
        f: &Finish,
    ) -> Result<Owned, StoreError> {
        let budget = lease.max(self.op_timeout);
        self.finish_op(key, owner, budget, f, true).await
    }

    /// The one store operation of `f`, within `budget` (patiently when nobody
    /// waits for it).
    async fn finish_op(
        &self,
        key: &str,
        owner: Owner,
        budget: Duration,
        f: &Finish,
        patient: bool,
    ) -> Result<Owned, StoreError> {
        let call = || self.finish_call(key, owner, f);
        if patient {
            self.op_patient(f.op(), key, budget, call).await
        } else {
            self.op_in(f.op(), key, budget, call).await
        }
    }

    fn finish_call<'s>(
        &'s self,
        key: &'s str,
        owner: Owner,
        f: &'s Finish,
    ) -> BoxFuture<'s, Result<Owned, StoreError>> {
        let store = &*self.store;
        match f {
            Finish::Complete {
                payload,
                ttl,
                taken,
            } => match taken {
                Some(t) => store.complete_taken(key, owner, *t, payload, *ttl),
                None => store.complete(key, owner, payload, *ttl),
            },
            Finish::Release => store.release(key, owner),
            Finish::TokenGiveBack => match store.tokens() {
                Some(t) => t.give_back(key, owner),
                None => Box::pin(std::future::ready(Err(StoreError::config(
                    "the store keeps no tokens",
                )))),
            },
        }
    }

    /// Undoes, in the background, a claim of `kind` whose answer never came.
    /// The claim may not have applied *yet*: a store that runs it detached
    /// (the SQL stores' write half), or on another pooled connection, can
    /// apply it after a release, and it then held the key for a lease (issue
    /// 24, m). So the same claim is sent again first, with the same owner: it
    /// queues behind the first one where the store orders them (a single
    /// writer, a row lock, one connection) and answers `Claimed` if the first
    /// one applied; then it is released, once. Releasing *before* that resend
    /// would free the key and let the resend take it again, so that a caller
    /// who saw it free found it busy. If the resend fails, the release is
    /// still sent (owner-checked: it frees only this owner's claim).
    async fn undo_in_flight(&self, spec: &Undo) -> Result<Owned, StoreError> {
        let (key, owner, lease) = (&*spec.key, spec.owner, spec.lease);
        let undo = Finish::undo(spec.kind);
        let budget = lease.max(self.op_timeout);
        let resent = match spec.kind {
            Kind::Record => {
                let req = ClaimRequest {
                    key,
                    owner,
                    fingerprint: spec.fingerprint,
                    lease,
                };
                self.op_reclaim(Op::Claim, key, budget, || self.store.claim_unfenced(req))
                    .await
                    .map(|c| matches!(c, Claim::Claimed { .. }))
            }
            Kind::Token => {
                let Some(tokens) = self.store.tokens() else {
                    return Ok(Owned::NotOwner);
                };
                self.op_reclaim(Op::TokenTake, key, budget, || tokens.take(key, owner))
                    .await
                    .map(|t| matches!(t, TokenTake::Taken { .. }))
            }
        };
        // Not ours (another owner holds the key, or the token is gone):
        // nothing to undo. Unknown (the resend failed): release anyway.
        if matches!(resent, Ok(false)) {
            return Ok(Owned::NotOwner);
        }
        self.in_background(key, owner, lease, &undo).await
    }
}

impl Exec {
    /// Settles, in a detached task, a claim this call sent but never got an answer
    /// for, once whatever the call ran without it has ended: the claim may still
    /// apply (a black hole delivers it when the network heals) and would then hold
    /// the key for a whole lease after the outage. `Complete` stores
    /// the value the degraded body produced, so a retry replays it; `Release`
    /// frees the key. Both are owner-checked: a claim that never applied, or a key
    /// someone else holds, is left alone. Tried for as long as the claim can
    /// matter (its lease), through an open breaker for a `Complete` (see
    /// [`Exec::in_background`]).
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

/// The owned facts an undo needs in a detached task.
struct Undo {
    key: String,
    owner: Owner,
    lease: Duration,
    kind: Kind,
    fingerprint: Fingerprint,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Off,
    /// A claim attempt was sent and has not answered: it may apply.
    InFlight,
    /// The claim is held and its body has not started.
    Held,
}

/// The armed undo of a claim whose body never started, fired when dropped.
/// Armed before each attempt is sent: a caller cancelled while the claim is in
/// flight still undoes it (owner-checked, so a claim that never applied is
/// untouched), and a caller cancelled while it holds the claim releases it (or
/// gives the token back). Disarmed once the body starts (its effects may commit:
/// the claim then lapses with its lease), once the attempt answered without
/// taking the key, or when a technique takes the claim over.
pub(crate) struct Armed<'a> {
    exec: &'a Arc<Exec>,
    key: &'a str,
    owner: Owner,
    lease: Duration,
    kind: Kind,
    fingerprint: Fingerprint,
    state: State,
}

impl<'a> Armed<'a> {
    pub(super) fn new(exec: &'a Arc<Exec>, spec: &super::ClaimSpec<'a>) -> Self {
        Armed {
            exec,
            key: spec.key,
            owner: spec.owner,
            lease: spec.lease,
            kind: spec.kind,
            fingerprint: spec.fingerprint,
            state: State::Off,
        }
    }

    pub(super) fn in_flight(&mut self) {
        self.state = State::InFlight;
    }

    pub(super) fn held(&mut self) {
        self.state = State::Held;
    }

    /// Nothing to undo any more (see the type's docs).
    pub(crate) fn disarm(&mut self) {
        self.state = State::Off;
    }
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        if self.state == State::Off {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let exec = Arc::clone(self.exec);
        let undo = Undo {
            key: self.key.to_owned(),
            owner: self.owner,
            lease: self.lease,
            kind: self.kind,
            fingerprint: self.fingerprint,
        };
        // A claim that may have applied blocks the key for a lease: worth trying to
        // undo for that long (a single attempt lost to a blip left callers
        // waiting out 30 s leases under load).
        let in_flight = self.state == State::InFlight;
        rt.spawn(async move {
            let _ = if in_flight {
                exec.undo_in_flight(&undo).await
            } else {
                exec.in_background(&undo.key, undo.owner, undo.lease, &Finish::undo(undo.kind))
                    .await
            };
        });
    }
}
