//! One store operation: a turn in the store's send queue, breaker check,
//! timeout, retries with the same owner, timing and error counts.
//!
//! Two clocks, for two questions. Waiting for a turn in the store's
//! [`SendQueue`](crate::store::SendQueue) is the client's own backlog under a
//! burst: it is bounded by the caller's budget (a claim's `wait`), reported as
//! `StoreError::Overloaded` when that runs out, and never counted against the
//! circuit breaker. The operation budget starts once the operation has its turn
//! and measures only the server's answer: that is what says whether the store is
//! up. A queue that stops moving (no answer to anyone for two operation
//! budgets, the longest an operation in flight waits for its answer) is an
//! outage whatever the caller's budget.
//!
//! Silence is only evidence against the store if this process could listen: the
//! answer to a command is read by the connection's own task, and when a burst
//! makes thousands of tasks runnable at once (or the machine is loaded), that
//! task and the caller's run late. [`answer`] therefore extends a deadline whose
//! timer itself fired late, by as long as it was late, up to one more budget:
//! under a 10,000-caller burst in a debug build on two busy cores, answers Redis
//! sent within milliseconds were otherwise read after the 800 ms budget and
//! reported as an outage (the cluster's three client hops per round
//! trip being hit first).

use std::future::{Future, poll_fn};
use std::task::Poll;
use std::time::Duration;

use tokio::time::Instant;

use super::Exec;
use crate::observe::Op;
use crate::store::queue::{NoTurn, STARVED, Turn};
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
    /// (simulation seed 547). Their failures count towards opening the breaker but
    /// never extend an open one (`Breaker::held_failure`). For the same
    /// reason they retry for their whole budget, where a claim gives up after three
    /// quick attempts: a `complete` lost to a 50 ms blip means the next duplicate
    /// runs the body again (simulation seed 121).
    ///
    /// Only `StoreError::Unavailable` counts as a failure of the store; an input
    /// the store refuses or a record it cannot decode is an answer, not an outage.
    pub(crate) fn op<'s, R>(
        &'s self,
        op: Op,
        key: &str,
        f: impl FnMut() -> BoxFuture<'s, Result<R, StoreError>>,
    ) -> impl Future<Output = Result<R, StoreError>> {
        self.op_in(op, key, self.op_timeout, f)
    }

    /// [`op`](Self::op) within `budget` instead of the handle's `op_timeout` (a
    /// call whose lease needs shorter operations, see `Policy::op_budget`).
    pub(crate) fn op_in<'s, R>(
        &'s self,
        op: Op,
        key: &str,
        budget: Duration,
        f: impl FnMut() -> BoxFuture<'s, Result<R, StoreError>>,
    ) -> impl Future<Output = Result<R, StoreError>> {
        self.op_with(op, key, budget, None, None, false, f)
    }

    /// [`op_in`](Self::op_in) for a new claim whose caller is prepared to wait:
    /// it may queue for a turn until `queue_until` (see `Waiter::queue_until`), and `sent` moves
    /// to the instant it got one, so a lease counted from `sent` is not shortened
    /// by the queueing (the store applies the claim after that instant).
    pub(crate) fn op_queued<'s, R>(
        &'s self,
        op: Op,
        key: &str,
        budget: Duration,
        queue_until: Option<Instant>,
        sent: &mut Instant,
        f: impl FnMut() -> BoxFuture<'s, Result<R, StoreError>>,
    ) -> impl Future<Output = Result<R, StoreError>> {
        self.op_with(op, key, budget, queue_until, Some(sent), false, f)
    }

    /// An operation on a held claim that nobody waits for (a detached finish): one
    /// attempt may take the whole `budget`, and failed attempts are retried within
    /// it until the breaker opens. A slow store runs requests in the order they
    /// arrive (SQLite's writer turn, a pool's queue): an attempt dropped at a short
    /// timeout leaves that queue before it applies, and its retry joins at the back
    /// again, behind the late claim it was meant to undo (the SQLite
    /// simulation under load: such an orphan held its key for a whole lease).
    pub(crate) fn op_patient<'s, R>(
        &'s self,
        op: Op,
        key: &str,
        budget: Duration,
        f: impl FnMut() -> BoxFuture<'s, Result<R, StoreError>>,
    ) -> impl Future<Output = Result<R, StoreError>> {
        debug_assert!(
            op.holds_claim(),
            "only a held claim's operations run detached"
        );
        self.op_with(op, key, budget, None, None, true, f)
    }

    /// The claim an undo sends again for a dropped caller whose claim got no
    /// answer (see `Exec::undo_in_flight`): it works on a claim that may be ours
    /// already, so it runs as an operation on a held claim does (patient, never
    /// refused by the breaker, no send-queue turn), under the claim's label.
    pub(crate) fn op_reclaim<'s, R>(
        &'s self,
        op: Op,
        key: &str,
        budget: Duration,
        f: impl FnMut() -> BoxFuture<'s, Result<R, StoreError>>,
    ) -> impl Future<Output = Result<R, StoreError>> {
        self.op_held(op, key, budget, None, None, true, true, f)
    }

    /// Operations on a held claim skip the send queue: they finish work already
    /// admitted (and free its key), so they must never wait behind new work; they
    /// are at most one per held claim.
    #[allow(clippy::too_many_arguments)]
    fn op_with<'s, R>(
        &'s self,
        op: Op,
        key: &str,
        budget: Duration,
        queue_until: Option<Instant>,
        sent: Option<&mut Instant>,
        background: bool,
        f: impl FnMut() -> BoxFuture<'s, Result<R, StoreError>>,
    ) -> impl Future<Output = Result<R, StoreError>> {
        self.op_held(
            op,
            key,
            budget,
            queue_until,
            sent,
            background,
            op.holds_claim(),
            f,
        )
    }

    /// [`op_with`](Self::op_with), `held` saying whether the operation works on
    /// a claim already (or possibly) held.
    #[allow(clippy::too_many_arguments)]
    async fn op_held<'s, R>(
        &'s self,
        op: Op,
        key: &str,
        budget: Duration,
        queue_until: Option<Instant>,
        mut sent: Option<&mut Instant>,
        background: bool,
        held: bool,
        mut f: impl FnMut() -> BoxFuture<'s, Result<R, StoreError>>,
    ) -> Result<R, StoreError> {
        if !held && !self.breaker.allow() {
            return Err(StoreError::Unavailable("circuit breaker open".into()));
        }
        let _turn = if held {
            None
        } else {
            self.turn(op, budget, queue_until, sent.as_deref_mut())
                .await?
        };
        // A claim's first attempt was timed when it was sent (or got its turn):
        // one clock read fewer on the path every duplicate takes.
        let mut t0 = match sent {
            Some(s) => *s,
            None => Instant::now(),
        };
        let deadline = t0 + budget;
        let mut attempt = 0u32;
        loop {
            if attempt > 0 {
                t0 = Instant::now();
            }
            let (r, waited) = match answer(deadline, budget, f()).await {
                Some(answered) => answered,
                None => (
                    Err(StoreError::unavailable(format!(
                        "no answer within {budget:?}"
                    ))),
                    true,
                ),
            };
            // An answer ready at its first poll (the memory store, a refusal)
            // took no measurable time: timed as zero, one clock read fewer.
            let secs = if waited {
                t0.elapsed().as_secs_f64()
            } else {
                0.0
            };
            self.store_ops.record(op, secs, r.is_ok());
            if !matches!(r, Err(StoreError::Unavailable(_)))
                && let Some(q) = self.store.send_queue()
            {
                q.answered();
            }
            match r {
                Ok(v) => {
                    self.breaker.success();
                    if op == Op::Complete {
                        let n = self.store.take_unreplicated();
                        if n > 0 {
                            self.store_ops.unreplicated(n);
                        }
                    }
                    return Ok(v);
                }
                Err(StoreError::Unavailable(msg)) => {
                    attempt += 1;
                    let pause = Duration::from_millis(5 << attempt.min(4));
                    // In the background the breaker says when the store is down
                    // rather than slow: retrying then only adds load, and the claim
                    // lapses with its lease, except for the operations whose lapse
                    // undoes a success (`Op::outlasts_open_breaker`): they wait
                    // the outage out, sending nothing until the store may be tried.
                    let outlast = background && op.outlasts_open_breaker();
                    let open = background && self.breaker.is_open();
                    // The waits below are boxed: a failure path, kept out of
                    // every operation's future (a profile: each
                    // timer inline made the future every call copies larger).
                    let give_up = (!held && attempt >= 3)
                        || (open && (!outlast || !Box::pin(self.breaker.wait_out(deadline)).await));
                    if give_up || (!open && Instant::now() + pause >= deadline) {
                        if held {
                            self.breaker.held_failure();
                        } else {
                            self.breaker.failure();
                        }
                        tracing::debug!(key = %crate::observe::key_hash(key), op = op.as_str(), error = %msg, "store unavailable");
                        return Err(StoreError::Unavailable(msg));
                    }
                    if !open {
                        Box::pin(tokio::time::sleep(self.jitter.apply(pause))).await;
                    }
                }
                Err(other) => return Err(other),
            }
        }
    }

    /// A turn in the store's send queue for a new operation (`None`: the store
    /// has no queue), waited for until `queue_until` or, past it or without
    /// it, for one operation `budget`. Free turns cost one atomic operation
    /// and no clock read; a caller that waited
    /// is timed (`idem_store_queue_seconds`, give-ups included), and one that
    /// gave up within its budget is counted (`idem_store_overloaded_total`).
    async fn turn(
        &self,
        op: Op,
        budget: Duration,
        queue_until: Option<Instant>,
        sent: Option<&mut Instant>,
    ) -> Result<Option<Turn<'_>>, StoreError> {
        let Some(q) = self.store.send_queue() else {
            return Ok(None);
        };
        if let Some(t) = q.try_turn() {
            return Ok(Some(t));
        }
        let open_before = self.breaker.is_open();
        let t0 = Instant::now();
        // Stuck: nothing answered for as long as an operation in flight may
        // wait for its answer (its budget, and as much again if starved).
        // Boxed: only a backlog gets here, and its timer would otherwise sit
        // in every operation's future.
        let until = queue_until.filter(|u| *u > t0).unwrap_or(t0 + budget);
        let turn = Box::pin(q.turn(until, budget * 2)).await;
        let now = Instant::now();
        self.store_ops.queued(op, (now - t0).as_secs_f64());
        match turn {
            Ok(t) => {
                // Calls that queued while the store failed are refused like new
                // ones (the breaker opened behind them).
                if !open_before && self.breaker.is_open() {
                    return Err(StoreError::Unavailable("circuit breaker open".into()));
                }
                if let Some(s) = sent {
                    *s = (*s).max(now);
                }
                Ok(Some(t))
            }
            Err(NoTurn::Overloaded(e)) => {
                self.store_ops.overloaded(op);
                Err(e)
            }
            Err(NoTurn::Unavailable(e)) => Err(e),
        }
    }
}

/// `fut`'s output if it comes by `deadline`, or later while this process was
/// too starved to have read it (see the module docs), never later than one
/// more `budget`, and whether it had to be waited for (not ready at the first
/// poll). `None`: the store did not answer.
async fn answer<T>(
    deadline: Instant,
    budget: Duration,
    mut fut: BoxFuture<'_, T>,
) -> Option<(T, bool)> {
    // A store that answers at once (the memory store, a refusal) needs no
    // timer: `timeout_at` would build one (a runtime handle taken and dropped)
    // around a future that is already done.
    if let Poll::Ready(v) = poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await {
        return Some((v, false));
    }
    // Boxed: the timer is only needed by a store that did not answer at once,
    // which also pays a round trip; inline it enlarged every call's future.
    Box::pin(answer_late(deadline, budget, fut))
        .await
        .map(|v| (v, true))
}

/// [`answer`] for a store that did not answer at once.
async fn answer_late<T>(
    deadline: Instant,
    budget: Duration,
    mut fut: BoxFuture<'_, T>,
) -> Option<T> {
    let cap = deadline + budget;
    let mut until = deadline;
    loop {
        match tokio::time::timeout_at(until, &mut fut).await {
            Ok(v) => return Some(v),
            Err(_) => {
                let now = Instant::now();
                let late = now.saturating_duration_since(until);
                if late < STARVED || now >= cap {
                    return None;
                }
                until = (now + late).min(cap);
            }
        }
    }
}
