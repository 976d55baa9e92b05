//! [`SendQueue`]: the turn an operation waits for before it is sent to the store.
//!
//! A store behind one multiplexed connection (or a small pool) accepts any number
//! of commands at once, and a burst of thousands of simultaneous callers then
//! waits *inside the client*: the last command of 10,000 written at once gets its
//! answer after all the others, seconds later on a loaded machine, although the
//! server answers each one in microseconds. Counted against the operation
//! timeout, that wait turned a healthy store into `StoreUnavailable` and opened
//! the circuit breaker for everyone. A store that has such a queue
//! bounds the operations in flight with a `SendQueue`; the execution layer takes
//! a turn before it starts the operation's timer, so:
//!
//! - waiting for a turn is bounded by the *caller's* budget (its `wait`), and a
//!   caller that cannot get one in time is told the store is overloaded
//!   (`Error::Overloaded`), which never counts against the circuit breaker;
//! - the operation timeout measures only the server's answer, as it should;
//! - a store that stops answering is still found out within two operation
//!   budgets: a queued caller that sees no answer to *anyone* for as long as an
//!   operation in flight may wait for its answer gives up as unavailable,
//!   whatever its own budget.
//!
//! The queue is fair (first come, first served) and costs nothing while turns are
//! free (one atomic operation).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

use super::StoreError;

/// A timer that fires later than this after its deadline means this process
/// was starved of CPU (a scheduler cycle over a burst of runnable tasks).
pub(crate) const STARVED: Duration = Duration::from_millis(50);

/// Bounds a store's operations in flight: a first-come, first-served queue of turns
/// (see the Bursts section of the Redis store's docs).
///
/// ```
/// use idem::store::SendQueue;
/// let q = SendQueue::new(256);
/// assert_eq!((q.limit(), q.in_flight(), q.waiting()), (256, 0, 0));
/// ```
#[derive(Debug)]
pub struct SendQueue {
    turns: Semaphore,
    limit: usize,
    waiting: AtomicUsize,
    /// Answers the store gave (of any kind): the queue moves while this does.
    answers: AtomicU64,
    /// Operations that had to wait for a turn, ever.
    queued: AtomicU64,
}

/// A turn to send one operation; the next caller's turn comes when it drops.
#[derive(Debug)]
pub(crate) struct Turn<'a> {
    _permit: SemaphorePermit<'a>,
}

/// Why a caller got no turn.
#[derive(Debug)]
pub(crate) enum NoTurn {
    /// The store kept answering, but not this caller within its budget.
    Overloaded(StoreError),
    /// Nobody got an answer for the stall period: the store is down.
    Unavailable(StoreError),
}

impl SendQueue {
    /// A queue of `limit` operations in flight (at least 1).
    pub fn new(limit: usize) -> Self {
        let limit = limit.clamp(1, Semaphore::MAX_PERMITS);
        SendQueue {
            turns: Semaphore::new(limit),
            limit,
            waiting: AtomicUsize::new(0),
            answers: AtomicU64::new(0),
            queued: AtomicU64::new(0),
        }
    }

    /// Operations allowed in flight at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Operations in flight now.
    pub fn in_flight(&self) -> usize {
        self.limit - self.turns.available_permits()
    }

    /// Operations waiting for a turn now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Operations that found no free turn and waited, since the store was built
    /// (the same events as the `idem_store_queue_seconds` histogram's samples,
    /// plus the waits that ended in `Overloaded` or `Unavailable`).
    pub fn queued_total(&self) -> u64 {
        self.queued.load(Ordering::Relaxed)
    }

    /// Notes that the store answered an operation (the queue is moving).
    pub(crate) fn answered(&self) {
        self.answers.fetch_add(1, Ordering::Relaxed);
    }

    /// A free turn, without waiting.
    pub(crate) fn try_turn(&self) -> Option<Turn<'_>> {
        self.turns.try_acquire().ok().map(|p| Turn { _permit: p })
    }

    /// Waits for a turn until `deadline`. Gives up as unavailable when no
    /// operation got an answer for `stall` while this one waited.
    pub(crate) async fn turn(
        &self,
        deadline: Instant,
        stall: Duration,
    ) -> Result<Turn<'_>, NoTurn> {
        let started = Instant::now();
        self.queued.fetch_add(1, Ordering::Relaxed);
        let _waiting = Waiting::enter(&self.waiting);
        let acquire = self.turns.acquire();
        tokio::pin!(acquire);
        let stall = stall.max(Duration::from_millis(1));
        loop {
            let seen = self.answers.load(Ordering::Relaxed);
            let check = (Instant::now() + stall).min(deadline);
            tokio::select! {
                biased;
                permit = &mut acquire => {
                    // The semaphore is never closed.
                    return permit.map(|p| Turn { _permit: p }).map_err(|_| {
                        NoTurn::Unavailable(StoreError::unavailable("send queue closed"))
                    });
                }
                () = tokio::time::sleep_until(check) => {}
            }
            let now = Instant::now();
            // A check that ran late means this process was starved of CPU: the
            // silence says nothing about the store (see `exec::op`'s `answer`).
            let starved = now.saturating_duration_since(check) >= STARVED;
            if now >= deadline {
                return Err(NoTurn::Overloaded(StoreError::overloaded(format!(
                    "no turn to send within {:?} ({} in flight, {} waiting)",
                    now - started,
                    self.in_flight(),
                    self.waiting()
                ))));
            }
            if !starved && self.answers.load(Ordering::Relaxed) == seen {
                return Err(NoTurn::Unavailable(StoreError::unavailable(format!(
                    "no answer to any of {} operations in flight within {stall:?}",
                    self.in_flight()
                ))));
            }
        }
    }
}

/// Counts a caller as waiting while it is in the queue (a dropped caller too).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn enter(n: &'a AtomicUsize) -> Self {
        n.fetch_add(1, Ordering::Relaxed);
        Waiting(n)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_moving_queue_is_overloaded_a_stuck_one_unavailable() {
        let q = SendQueue::new(1);
        let held = q.try_turn().expect("a free turn");
        assert!(q.try_turn().is_none());
        // Answers keep coming (other operations finish), but the turn does not.
        let ticker = async {
            loop {
                tokio::time::sleep(Duration::from_millis(10)).await;
                q.answered();
            }
        };
        let waited = tokio::select! {
            r = q.turn(Instant::now() + Duration::from_millis(300), Duration::from_millis(100)) => r,
            () = ticker => unreachable!(),
        };
        assert!(
            matches!(waited, Err(NoTurn::Overloaded(StoreError::Overloaded(_)))),
            "{waited:?}"
        );
        // Nothing answers: unavailable after one stall period, before the deadline.
        let t0 = Instant::now();
        let r = q
            .turn(t0 + Duration::from_secs(10), Duration::from_millis(100))
            .await;
        assert!(matches!(r, Err(NoTurn::Unavailable(_))), "{r:?}");
        assert!(t0.elapsed() < Duration::from_millis(250));
        assert_eq!(q.waiting(), 0);
        // A released turn goes to the waiter.
        drop(held);
        assert!(
            q.turn(Instant::now(), Duration::from_millis(1))
                .await
                .is_ok()
        );
        assert_eq!(q.in_flight(), 0);
    }
}
