//! THE claim engine: the one claim-or-wait primitive every technique that
//! takes a key calls (the guard, the lock, one-time tokens; the transactional
//! guard's front and the state check-and-set use its op budget and finish).
//!
//! ```text
//! acquire(spec, send, read)
//!   loop: queue turn ─ send (armed: a claim in flight is undone if the call is dropped)
//!     ├─ Claimed(fence) ──> Acquired::Held(Claimed)   (registered for local wake-ups)
//!     ├─ Busy(remaining) ─> wait (local wake-up, else jittered backoff) within `wait`
//!     │                      └─ budget spent ──> Acquired::Busy
//!     ├─ Stop(answer) ────> Acquired::Stopped        (a record, an invalid token, a mismatch)
//!     └─ store error ─────> Acquired::Failed         (a claim sent without an answer stays
//!                                                     armed: undone when the call ends)
//! ```
//!
//! What a held claim does next is the technique's: run the body under
//! [`Exec::hold`] and end it with [`Exec::finish`], the detached finish for
//! every way a held claim ends ([`Finish`]).

use std::time::Duration;

use super::finish::{Armed, Kind};
use super::{Exec, Held, Inflight, Waiter};
use crate::fence::Fence;
use crate::fingerprint::Fingerprint;
use crate::observe::Op;
use crate::store::{BoxFuture, Claim, ClaimRequest, Owner, StoreError};

/// One claim attempt's answer, as the technique reads the store's reply.
#[derive(Debug)]
pub(crate) enum Answer<D> {
    /// The caller holds the key now (or already did: a retried claim).
    Claimed(Fence),
    /// Someone else holds it; their lease lapses in this long. Wait and retry.
    Busy(Duration),
    /// An answer that ends the attempt: a finished record, an invalid token,
    /// a busy key with another payload.
    Stop(D),
}

/// One call's claim: which key, by whom, for how long, and how to wait.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClaimSpec<'a> {
    /// The claim's operation label (`claim`, `token_take`).
    pub(crate) op: Op,
    /// Record claim or token take: decides renewal, undo and finish operations.
    pub(crate) kind: Kind,
    pub(crate) key: &'a str,
    pub(crate) owner: Owner,
    /// The claim's request fingerprint (records; `NONE` for locks and tokens),
    /// re-sent by the undo of a claim whose answer was lost.
    pub(crate) fingerprint: Fingerprint,
    pub(crate) lease: Duration,
    /// How long a caller that finds the key busy waits (zero: rejects at once).
    pub(crate) wait: Duration,
}

/// What [`Exec::acquire`] ended with.
pub(crate) enum Acquired<'a, D> {
    /// The key is this caller's.
    Held(Claimed<'a>),
    /// The store's answer ended the attempt; `waited`: after at least one wait.
    Stopped { answer: D, waited: bool },
    /// Still busy when the wait budget ran out, after `waited`; the
    /// holder's lease had `lease_left` by the last answer's count.
    Busy {
        waited: Duration,
        lease_left: Duration,
    },
    /// The store failed. `sent`: a claim was handed to the store without an
    /// answer (it may apply); `pending` undoes it when dropped, unless the
    /// technique takes it over ([`Armed::disarm`]).
    Failed {
        error: StoreError,
        sent: bool,
        pending: Armed<'a>,
    },
}

/// A claim this caller holds: the [`Held`] facts, the armed undo (released if
/// the call is dropped before [`disarm`](Self::disarm)), and the local
/// registration that wakes same-process waiters when this is dropped.
pub(crate) struct Claimed<'a> {
    pub(crate) held: Held<'a>,
    armed: Armed<'a>,
    _local: Inflight<'a>,
}

impl Claimed<'_> {
    /// A drop no longer undoes the claim: its body starts and its effects may
    /// commit, so it lapses with its lease (rule 8: guards, tokens), or its
    /// finish takes over (a lock's release).
    pub(crate) fn disarm(&mut self) {
        self.armed.disarm();
    }
}

impl Exec {
    /// The store's claim for a caller whose body reads its fence (`claim`) or
    /// does not (`claim_unfenced`: on Redis one native command instead of the
    /// fence-stamping script).
    pub(crate) fn send_claim<'s>(
        &'s self,
        fenced: bool,
        req: ClaimRequest<'s>,
    ) -> BoxFuture<'s, Result<Claim, StoreError>> {
        if fenced {
            self.store.claim(req)
        } else {
            self.store.claim_unfenced(req)
        }
    }

    /// The per-operation budget of a claim with `lease` (the one rule,
    /// `policy::op_budget`).
    pub(crate) fn op_budget(&self, lease: Duration) -> Duration {
        crate::policy::op_budget(self.op_timeout, lease)
    }

    /// Claims `spec.key`, waiting while it is busy: see the module docs.
    /// `send` starts one attempt (called again for each retry, with the same
    /// owner); `read` turns its reply into an [`Answer`].
    pub(crate) async fn acquire<'s, R, D>(
        self: &'s std::sync::Arc<Self>,
        spec: ClaimSpec<'s>,
        mut send: impl FnMut() -> BoxFuture<'s, Result<R, StoreError>>,
        mut read: impl FnMut(R) -> Answer<D>,
    ) -> Acquired<'s, D> {
        let key = spec.key;
        let budget = self.op_budget(spec.lease);
        let mut waiter = Waiter::new(spec.wait);
        // Armed while an attempt is in flight: a caller dropped then undoes it
        // (owner-checked: harmless if it never applied).
        let mut armed = Armed::new(self, &spec);
        loop {
            let mut sent = waiter.attempt();
            // Set when the claim is handed to the store (the breaker let it through).
            let mut handed = false;
            // Under a burst the claim may queue in the client for what is left
            // of the caller's wait; `sent` then moves to its turn.
            let queue = waiter.queue_until();
            armed.in_flight();
            let reply = self
                .op_queued(spec.op, key, budget, queue, &mut sent, || {
                    handed = true;
                    send()
                })
                .await;
            match reply.map(&mut read) {
                Ok(Answer::Claimed(fence)) => {
                    armed.held();
                    let held = Held {
                        key,
                        owner: spec.owner,
                        fence,
                        fingerprint: spec.fingerprint,
                        lease: spec.lease,
                        sent,
                        budget,
                    };
                    return Acquired::Held(Claimed {
                        held,
                        armed,
                        _local: Inflight::register(self, key),
                    });
                }
                Ok(Answer::Stop(answer)) => {
                    armed.disarm();
                    return Acquired::Stopped {
                        answer,
                        waited: waiter.waited(),
                    };
                }
                Ok(Answer::Busy(remaining)) => {
                    // The attempt answered: nothing of ours to undo while waiting.
                    armed.disarm();
                    let answered = tokio::time::Instant::now();
                    // Boxed: only a busy key waits, and the wait's timers
                    // inline enlarged every call's future.
                    if !Box::pin(waiter.wait(self, key, remaining)).await {
                        return Acquired::Busy {
                            waited: waiter.elapsed(),
                            lease_left: remaining.saturating_sub(answered.elapsed()),
                        };
                    }
                }
                Err(error) => {
                    // A claim that got no answer may have applied, or may still
                    // apply (a slow store runs it after our timeout), and would
                    // block the key for a whole lease from then: it stays armed
                    // and is undone when the caller drops `pending`. Nothing to
                    // undo when nothing was sent (the breaker refused the call) or
                    // the store answered (the claim did not apply). An open breaker
                    // is no reason to skip it: the failure that opened it may be
                    // this very claim, on a store that is slow rather than down
                    // (SQLite simulation seed 3).
                    let sent = handed && matches!(error, StoreError::Unavailable(_));
                    if !sent {
                        armed.disarm();
                    } else if error.is_unreplicated() {
                        // Applied and ours, only not replicated enough: undone
                        // by a plain release, nothing to ask again.
                        armed.held();
                    }
                    return Acquired::Failed {
                        error,
                        sent,
                        pending: armed,
                    };
                }
            }
        }
    }
}
