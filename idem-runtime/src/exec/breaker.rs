//! A circuit breaker in front of the store.
//!
//! When the store is down, every guarded call would otherwise pay the full
//! operation timeout before failing. After `threshold` consecutive failures the
//! breaker opens and calls fail at once for `cooldown`; then one probe call is let
//! through (half-open) and its result closes or re-opens the breaker. A probe that
//! never reports (its caller was dropped mid-operation, or it ended with an error
//! that is not an outage) must not leave the breaker half-open for ever: after
//! another `cooldown` without a verdict, the next call probes again.
//!
//! Recovery is bounded: a store that heals is probed at most one `cooldown` after
//! healing (plus the probe's round trip). Two rules keep it so (through a
//! 3 s black hole the breaker stayed open ≈ 1.1 s past the heal and degraded 27
//! more calls):
//! - a failure reported while the breaker is already open does not restart the
//!   cooldown: it comes from an operation admitted before the breaker opened, and
//!   says nothing new;
//! - failures of operations on claims already held ([`held_failure`]: renewals,
//!   completes and releases, which the breaker never refuses and which keep
//!   failing for as long as the outage lasts) count towards opening a closed
//!   breaker but never extend or re-open the gate on new claims. Only the probe's
//!   own failure (a new claim let through half-open) re-opens it.
//!
//! [`held_failure`]: Breaker::held_failure

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

#[derive(Debug, Clone, Copy)]
enum State {
    Closed { failures: u32 },
    Open { until: Instant },
    HalfOpen { until: Instant },
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Breaker {
    /// True exactly when `state` is `Closed { failures: 0 }`, written under the
    /// lock: the healthy path (every store operation calls `allow` and `success`)
    /// reads one atomic instead of taking a mutex twice, which under 64 concurrent
    /// callers on two threads was a contended lock per operation.
    healthy: AtomicBool,
    state: Mutex<State>,
    /// Woken when the breaker closes: background finishes that wait out an
    /// open breaker ([`Breaker::wait_out`]) send as soon as a probe succeeded.
    closed: Notify,
    threshold: u32,
    cooldown: Duration,
}

impl Breaker {
    pub(crate) fn new(threshold: u32, cooldown: Duration) -> Self {
        Breaker {
            healthy: AtomicBool::new(true),
            state: Mutex::new(State::Closed { failures: 0 }),
            closed: Notify::new(),
            threshold: threshold.max(1),
            cooldown,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// May a call go to the store now? Moves an expired open breaker to half-open
    /// and lets exactly that one caller through.
    pub(crate) fn allow(&self) -> bool {
        if self.healthy.load(Ordering::Acquire) {
            return true;
        }
        let mut st = self.lock();
        match *st {
            State::Closed { .. } => true,
            State::Open { until } | State::HalfOpen { until } if Instant::now() >= until => {
                *st = State::HalfOpen {
                    until: Instant::now() + self.cooldown,
                };
                true
            }
            State::Open { .. } | State::HalfOpen { .. } => false,
        }
    }

    pub(crate) fn success(&self) {
        if self.healthy.load(Ordering::Acquire) {
            return;
        }
        let mut st = self.lock();
        *st = State::Closed { failures: 0 };
        self.healthy.store(true, Ordering::Release);
        drop(st);
        self.closed.notify_waiters();
    }

    /// Waits, without sending anything, until the store may be tried again: the
    /// breaker closed (another probe succeeded), this caller is let through as the
    /// probe, or `deadline` passed (false). For the background finishes whose
    /// lapse would undo a success ([`Op::outlasts_open_breaker`]): they keep
    /// their result for the store's return instead of giving up, yet add no load
    /// while it is down, and many of them make one probe, not a burst.
    ///
    /// [`Op::outlasts_open_breaker`]: crate::observe::Op::outlasts_open_breaker
    pub(crate) async fn wait_out(&self, deadline: Instant) -> bool {
        loop {
            let closed = self.closed.notified();
            tokio::pin!(closed);
            closed.as_mut().enable();
            // Closed, or this caller is the probe.
            if self.allow() {
                return true;
            }
            let next = match *self.lock() {
                State::Open { until } | State::HalfOpen { until } => until.min(deadline),
                State::Closed { .. } => return true,
            };
            if Instant::now() >= deadline {
                return false;
            }
            tokio::select! {
                () = &mut closed => return true,
                () = tokio::time::sleep_until(next) => {}
            }
        }
    }

    /// A new claim (or any operation the breaker gates) found the store
    /// unavailable. Counts towards opening a closed breaker, re-opens a half-open
    /// one (the probe failed), and leaves an open one's cooldown as it is.
    pub(crate) fn failure(&self) {
        let mut st = self.lock();
        *st = match *st {
            State::Closed { failures } => self.closed_failure(failures),
            open @ State::Open { .. } => open,
            State::HalfOpen { .. } => State::Open {
                until: Instant::now() + self.cooldown,
            },
        };
        self.healthy.store(false, Ordering::Release);
    }

    /// An operation on a claim already held (renew, complete, release) found the
    /// store unavailable. Evidence of an outage while the breaker is closed; once
    /// it is open or probing, the gate on new claims is the probe's to decide.
    pub(crate) fn held_failure(&self) {
        let mut st = self.lock();
        if let State::Closed { failures } = *st {
            *st = self.closed_failure(failures);
            self.healthy.store(false, Ordering::Release);
        }
    }

    fn closed_failure(&self, failures: u32) -> State {
        if failures + 1 < self.threshold {
            State::Closed {
                failures: failures + 1,
            }
        } else {
            State::Open {
                until: Instant::now() + self.cooldown,
            }
        }
    }

    /// Open or half-open: the store is deemed down. An open breaker does not stop
    /// the release of a claim that was sent, only its retries in the background.
    pub(crate) fn is_open(&self) -> bool {
        if self.healthy.load(Ordering::Acquire) {
            return false;
        }
        !matches!(*self.lock(), State::Closed { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn opens_after_threshold_and_probes_after_cooldown() {
        let b = Breaker::new(3, Duration::from_secs(1));
        for _ in 0..2 {
            assert!(b.allow());
            b.failure();
        }
        assert!(!b.is_open());
        b.failure();
        assert!(!b.allow());
        tokio::time::advance(Duration::from_millis(1001)).await;
        assert!(b.allow(), "one probe after cooldown");
        assert!(!b.allow(), "only one probe while half-open");
        b.success();
        assert!(b.allow());
        // A success resets the count: two more failures stay below the threshold.
        b.failure();
        b.failure();
        b.success();
        b.failure();
        b.failure();
        assert!(!b.is_open());
        assert!(b.allow());
        b.failure();
        assert!(b.is_open());
        assert!(!b.allow());
    }

    /// Found by the simulation (seed 5174): a renewal was the half-open probe, the
    /// body finished meanwhile and dropped it, and the process failed closed for ever.
    #[tokio::test(start_paused = true)]
    async fn a_probe_that_never_reports_does_not_wedge_the_breaker() {
        let b = Breaker::new(1, Duration::from_secs(1));
        b.failure();
        tokio::time::advance(Duration::from_millis(1001)).await;
        assert!(b.allow(), "the probe");
        // ... which is dropped: neither success() nor failure() is ever called.
        assert!(!b.allow(), "still waiting for the probe");
        tokio::time::advance(Duration::from_millis(1001)).await;
        assert!(b.allow(), "a new probe after another cooldown");
        b.success();
        assert!(b.allow() && b.allow(), "closed again");
    }

    /// Late failures while open (operations admitted before it opened)
    /// do not push the probe back; a healed store is probed one cooldown after the
    /// breaker opened, however many failures trickled in meanwhile.
    #[tokio::test(start_paused = true)]
    async fn failures_while_open_do_not_restart_the_cooldown() {
        let b = Breaker::new(2, Duration::from_secs(1));
        b.failure();
        b.failure();
        assert!(!b.allow(), "open");
        for _ in 0..9 {
            tokio::time::advance(Duration::from_millis(100)).await;
            b.failure();
        }
        tokio::time::advance(Duration::from_millis(101)).await;
        assert!(b.allow(), "probed one cooldown after opening");
        b.failure();
        assert!(!b.allow(), "the probe's own failure re-opens it");
        tokio::time::advance(Duration::from_millis(1001)).await;
        assert!(b.allow());
        b.success();
        assert!(!b.is_open());
    }

    /// Renewals and completes of held claims keep failing through an
    /// outage; they open a closed breaker but never extend, or re-open, the gate
    /// on new claims.
    #[tokio::test(start_paused = true)]
    async fn held_failures_open_but_never_extend_the_gate() {
        let b = Breaker::new(3, Duration::from_secs(1));
        b.held_failure();
        b.failure();
        assert!(!b.is_open());
        b.held_failure();
        assert!(b.is_open(), "held failures count while closed");
        tokio::time::advance(Duration::from_millis(600)).await;
        b.held_failure();
        tokio::time::advance(Duration::from_millis(401)).await;
        assert!(b.allow(), "the probe, on time");
        b.held_failure();
        b.held_failure();
        assert!(!b.allow(), "half-open: still one probe only");
        b.success();
        assert!(b.allow() && !b.is_open(), "the probe's success closes it");
    }

    /// Background finishes waiting out an open breaker send nothing while it is
    /// open; after the cooldown one of them is the probe, and its success wakes
    /// the others at once. Past its deadline a waiter gives up.
    #[tokio::test(start_paused = true)]
    async fn waiters_make_one_probe_and_wake_when_it_closes() {
        let b = std::sync::Arc::new(Breaker::new(1, Duration::from_secs(1)));
        b.held_failure();
        let t0 = Instant::now();
        let waiters: Vec<_> = (0..5)
            .map(|_| {
                let b = std::sync::Arc::clone(&b);
                tokio::spawn(async move {
                    let ok = b.wait_out(t0 + Duration::from_secs(5)).await;
                    (ok, t0.elapsed())
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let done = waiters.iter().filter(|w| w.is_finished()).count();
        assert_eq!(done, 1, "exactly one waiter is let through as the probe");
        assert!(!b.allow(), "half-open while the probe is out");
        tokio::time::sleep(Duration::from_millis(100)).await;
        b.success();
        for w in waiters {
            let (ok, at) = w.await.expect("a waiter");
            assert!(ok);
            assert!(
                at >= Duration::from_secs(1) && at <= Duration::from_millis(1600),
                "{at:?}"
            );
        }
        b.held_failure();
        let gave_up = b
            .wait_out(Instant::now() + Duration::from_millis(300))
            .await;
        assert!(!gave_up, "the deadline comes before the cooldown ends");
    }
}
