//! The relay's loop: a claimer takes batches while up to `in_flight` earlier
//! batches wait for their confirmations, so the database and the broker work
//! at the same time instead of taking turns.
//!
//! ```text
//! claimer:   claim 1 ─ claim 2 ─ claim 3 ─(3 in flight: waits)─ claim 4 …
//! delivery:  └ publish 1 … confirms 1, mark 1
//!                      └ publish 2 … confirms 2, mark 2
//!                                └ publish 3 … confirms 3, mark 3
//! ```
//!
//! Both halves run in the task that called [`Relay::run`]: a permit per batch
//! in flight bounds the claimer, and a finished batch wakes it (its ordered
//! successors may be due now). When nothing is due the claimer sleeps with
//! backoff, or until a commit wakes it (PostgreSQL `NOTIFY`, `wake.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};

use super::relay::Relay;
use super::round::{Batch, BatchEnd};
use super::wake::Wake;
use crate::consume::ShutdownSignal;

/// What the two halves share.
struct Shared {
    /// A batch finished: the claimer may find newly due messages.
    done: Notify,
    /// Batches that ended without the broker's answer.
    downs: AtomicU64,
}

impl Relay {
    /// Relays until `signal` is triggered. The batches in flight when it is
    /// finish (their confirmations awaited, their messages marked); then the
    /// broker connection is closed. Failures are logged and retried with
    /// backoff, never returned.
    pub async fn run(&self, signal: ShutdownSignal) {
        let depth = self.opts.in_flight.max(1);
        let shared = Shared {
            done: Notify::new(),
            downs: AtomicU64::new(0),
        };
        let (tx, rx) = mpsc::channel(depth);
        tokio::join!(
            self.claimer(signal, &shared, tx, depth),
            self.delivery(rx, &shared)
        );
        self.read_gauges().await;
        self.publisher.close().await;
    }

    /// Claims batches and hands them to [`delivery`](Self::delivery).
    async fn claimer(
        &self,
        mut signal: ShutdownSignal,
        shared: &Shared,
        tx: mpsc::Sender<(Batch, OwnedSemaphorePermit)>,
        depth: usize,
    ) {
        let permits = std::sync::Arc::new(Semaphore::new(depth));
        let mut wake = Wake::new(self).await;
        let base_down = self.opts.breaker_cooldown.max(Duration::from_millis(50)) / 2;
        let (mut down, mut idle) = (base_down, self.opts.idle_poll);
        let mut seen_downs = 0;
        let mut stats_at = tokio::time::Instant::now();
        while !signal.is_triggered() {
            if tokio::time::Instant::now() >= stats_at {
                self.read_gauges().await;
                stats_at = tokio::time::Instant::now() + self.opts.stats_every;
            }
            let permit = tokio::select! {
                p = permits.clone().acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => break,
                },
                _ = signal.triggered() => break,
            };
            let downs = shared.downs.load(Ordering::Relaxed);
            let pause = if downs != seen_downs {
                // The broker stopped answering: back off before claiming
                // what it cannot take.
                seen_downs = downs;
                down = (down * 2).min(Duration::from_secs(10));
                Some(self.exec.jitter.apply(down))
            } else {
                match self.claim().await {
                    Ok(Some(batch)) => {
                        (down, idle) = (base_down, self.opts.idle_poll);
                        if tx.send((batch, permit)).await.is_err() {
                            break;
                        }
                        None
                    }
                    Ok(None) => {
                        drop(permit);
                        let woken = wake.wait(idle, &shared.done, &mut signal).await;
                        idle = if woken {
                            self.opts.idle_poll
                        } else {
                            (idle * 2).min(self.opts.idle_max.max(self.opts.idle_poll))
                        };
                        None
                    }
                    Err(e) => {
                        tracing::warn!(relay = %self.opts.name, error = %e, "idem: outbox claim failed");
                        down = (down * 2).min(Duration::from_secs(10));
                        Some(self.exec.jitter.apply(down))
                    }
                }
            };
            if let Some(pause) = pause {
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = signal.triggered() => break,
                }
            }
        }
    }

    /// Publishes the claimed batches, several at once, until the claimer
    /// stops and the last one is done.
    async fn delivery(
        &self,
        mut rx: mpsc::Receiver<(Batch, OwnedSemaphorePermit)>,
        shared: &Shared,
    ) {
        let mut in_flight = FuturesUnordered::new();
        loop {
            tokio::select! {
                Some((batch, permit)) = rx.recv() => in_flight.push(async move {
                    let end = self.deliver(batch).await;
                    drop(permit);
                    end
                }),
                Some(end) = in_flight.next(), if !in_flight.is_empty() => {
                    if end == BatchEnd::BrokerDown {
                        shared.downs.fetch_add(1, Ordering::Relaxed);
                    }
                    shared.done.notify_one();
                }
                else => break,
            }
        }
    }
}
