//! A held claim and the two loops around it: the watchdog that keeps its lease
//! alive while the body runs, and the wait of a caller that found the key busy.
//!
//! Lease timing is counted from when a claim or renewal was *sent*: the store
//! applies it at some instant after that, so `sent + lease` is the earliest the
//! lease can lapse. Counting from when the reply *arrived* (as the first version
//! did) lost up to one operation timeout per renewal: a claim applied at t=0 whose
//! reply came at 700 ms renewed first at ≈1.03 s with a 1 s lease, and a duplicate
//! at 1.01 s ran beside it. Renewal every `lease / 3` from the send
//! instant, with every operation bounded by `lease / 3` (the per-call operation
//! budget, `Policy::op_budget`), leaves two full attempts before the lease can lapse.

use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use tokio::time::Instant;

use super::Exec;
use crate::fence::Fence;
use crate::fingerprint::Fingerprint;
use crate::observe::Op;
use crate::store::{Owned, Owner, Taken};

/// A claim this caller holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Held<'a> {
    pub(crate) key: &'a str,
    pub(crate) owner: Owner,
    pub(crate) fence: Fence,
    /// The fingerprint the claim was sent with.
    pub(crate) fingerprint: Fingerprint,
    /// The claim's life without renewal.
    pub(crate) lease: Duration,
    /// When the claim that took the key was sent (its first attempt).
    pub(crate) sent: Instant,
    /// The budget of each operation on it (at most a third of the lease).
    pub(crate) budget: Duration,
}

impl Held<'_> {
    /// The claim as its holder took it, for `Store::complete_taken`.
    pub(crate) fn taken(&self) -> Taken {
        Taken {
            fence: self.fence,
            fingerprint: self.fingerprint,
        }
    }
}

impl Exec {
    /// Runs `body` while a watchdog renews `held`'s lease every `lease / 3`, until
    /// `max_hold` after the claim. The watchdog lives in this future: if the caller
    /// drops it, renewal stops and the lease lapses, so no other caller can run the
    /// body while ours may still commit.
    pub(crate) async fn hold<F: Future>(
        &self,
        held: &Held<'_>,
        max_hold: Duration,
        body: F,
    ) -> F::Output {
        self.hold_tracked(held, max_hold, None, body).await
    }

    /// [`hold`](Self::hold), reporting each renewal to `live` so the body can ask
    /// whether its lease still holds (the distributed lock's `is_valid()`).
    pub(crate) async fn hold_tracked<F: Future>(
        &self,
        held: &Held<'_>,
        max_hold: Duration,
        live: Option<&Liveness>,
        body: F,
    ) -> F::Output {
        let mut body = pin!(body);
        // A body that is done at its first poll never needs renewing: the
        // watchdog (a box, a timer armed and cancelled) is only built for one
        // that is still running, from the same instants (`held.sent`), so its
        // renewals come exactly when they would have.
        if let Poll::Ready(r) = poll_fn(|cx| Poll::Ready(body.as_mut().poll(cx))).await {
            return r;
        }
        tokio::select! {
            biased;
            r = body => r,
            // Boxed: renewal (timers, a store operation) would otherwise add its
            // size to the future of every call, replays included.
            never = Box::pin(self.watchdog(held, max_hold, live)) => match never {},
        }
    }

    /// Renews until `max_hold`, or parks once the lease is lost. Never returns: the
    /// body's `select!` ends it.
    async fn watchdog(
        &self,
        held: &Held<'_>,
        max_hold: Duration,
        live: Option<&Liveness>,
    ) -> Infallible {
        let Held {
            key,
            owner,
            lease,
            budget,
            ..
        } = *held;
        let every = (lease / 3).max(Duration::from_millis(1));
        let hold_until = held.sent.checked_add(max_hold);
        let mut next = held.sent + every;
        loop {
            tokio::time::sleep_until(next).await;
            let sent = Instant::now();
            if hold_until.is_none_or(|h| sent.checked_add(lease).is_none_or(|end| end > h)) {
                tracing::warn!(key = %crate::observe::key_hash(key), "max_hold reached: lease renewal stops and will lapse");
                return std::future::pending().await;
            }
            let renewed = self
                .op_in(Op::Renew, key, budget, || {
                    self.store.renew(key, owner, lease)
                })
                .await;
            match renewed {
                Ok(Owned::Applied) => {
                    if let Some(l) = live {
                        l.renewed(sent + lease);
                    }
                }
                Ok(Owned::NotOwner) => {
                    if let Some(l) = live {
                        l.lost();
                    }
                    tracing::warn!(
                        key = %crate::observe::key_hash(key),
                        "lease lost while the body runs: only fenced writes are safe now"
                    );
                    return std::future::pending().await;
                }
                // The lease is still good until the last successful send + lease:
                // try again a third of a lease after this attempt was sent.
                Err(e) => {
                    tracing::warn!(key = %crate::observe::key_hash(key), error = %e, "lease renewal failed; retrying")
                }
            }
            next = sent + every;
        }
    }
}

/// Whether a held lease still holds, as far as this process can tell: until the
/// last confirmed claim or renewal's *send* instant plus the lease (the store
/// applied it no earlier), and never again once the store said another owner has
/// the key. A failed renewal does not extend it, so a holder cut off from its
/// store sees `false` as soon as its lease may have lapsed. Shared between the
/// watchdog (which writes it) and the body (which reads it).
#[derive(Debug)]
pub(crate) struct Liveness(std::sync::Mutex<(Instant, bool)>);

impl Liveness {
    /// A lease whose claim was sent at `sent`.
    pub(crate) fn new(sent: Instant, lease: Duration) -> Self {
        Liveness(std::sync::Mutex::new((sent + lease, false)))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, (Instant, bool)> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A renewal sent at `until - lease` was confirmed. If the lease may have
    /// lapsed before the confirmation arrived, the body has already been told (or
    /// could have been) that it lost the lock: it stays lost, so `holds` never
    /// turns true again.
    fn renewed(&self, until: Instant) {
        let mut s = self.state();
        if Instant::now() >= s.0 {
            s.1 = true;
        } else {
            s.0 = s.0.max(until);
        }
    }

    /// Marks the lease as taken over: it never holds again.
    pub(crate) fn lost(&self) {
        self.state().1 = true;
    }

    /// True while the lease certainly holds.
    pub(crate) fn holds(&self) -> bool {
        let s = self.state();
        !s.1 && Instant::now() < s.0
    }
}

/// The wait of a caller that found the key held by someone else: a local wake-up
/// when the holder is in this process, otherwise polling with a jittered backoff
/// from 2 to 50 ms, never past the budget (counted from the start of the call, so a slow
/// first claim counts against it) nor much past the holder's lease.
#[derive(Debug)]
pub(crate) struct Waiter {
    started: Instant,
    budget: Duration,
    backoff: Duration,
    waited: bool,
    attempts: u32,
}

impl Waiter {
    pub(crate) fn new(budget: Duration) -> Self {
        Waiter {
            started: Instant::now(),
            budget,
            backoff: Duration::from_millis(2),
            waited: false,
            attempts: 0,
        }
    }

    /// The instant this attempt to take the key is sent: the call's start for the
    /// first one (one clock read fewer on the path every duplicate takes), now for
    /// the others. The lease of a claim is counted from it.
    pub(crate) fn attempt(&mut self) -> Instant {
        self.attempts += 1;
        if self.attempts == 1 {
            self.started
        } else {
            Instant::now()
        }
    }

    /// How long since the call started.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Until when the next attempt may wait for a turn in the store's send
    /// queue under a burst: the end of this caller's wait. A caller that does
    /// not wait (`reject`, or its wait is spent) gets the operation budget it
    /// always had (`Exec::turn`). An instant, not a duration: a free turn then
    /// needs no clock read.
    pub(crate) fn queue_until(&self) -> Option<Instant> {
        self.started.checked_add(self.budget)
    }

    /// True once the caller has waited at least once.
    pub(crate) fn waited(&self) -> bool {
        self.waited
    }

    /// After a busy answer: waits for the holder and returns true, or returns false
    /// at once when the budget is spent (a zero budget rejects at once).
    pub(crate) async fn wait(&mut self, exec: &Exec, key: &str, holder_left: Duration) -> bool {
        let elapsed = self.elapsed();
        if elapsed >= self.budget {
            return false;
        }
        self.waited = true;
        let budget =
            (self.budget - elapsed).min(holder_left.saturating_add(Duration::from_millis(1)));
        if !exec.wait_local(key, budget).await {
            tokio::time::sleep(exec.jitter.apply(self.backoff).min(budget)).await;
            self.backoff = (self.backoff * 2).min(Duration::from_millis(50));
        }
        true
    }
}
