//! What the broker consumer loops share: options (prefetch, concurrency,
//! poison threshold, reconnect backoff), the [`Delivery`] a handler receives,
//! graceful shutdown, counters, and the one decision every delivery ends in:
//! ack after the handler's commit, back to the broker on an error, or poison
//! after the last allowed attempt. `pump.rs` runs the session loop on these;
//! `amqp.rs` and `nats.rs` only translate them into their broker's calls.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::observe::{DeliveryEvent, TraceContext, count_delivery};

/// One message as a handler sees it.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The broker's message id (AMQP `message_id`, NATS `Nats-Msg-Id`), if
    /// the publisher set one; otherwise take one from the payload.
    pub id: Option<String>,
    /// The message body.
    pub payload: Vec<u8>,
    /// This delivery's attempt, from 1: the broker's count where it keeps one
    /// (NATS, RabbitMQ quorum queues' `x-delivery-count`), else this
    /// process's count of failures of this message id.
    pub attempt: u32,
    /// The broker delivered it before.
    pub redelivered: bool,
    /// The W3C trace context of the message's creation, from its
    /// `traceparent` and `tracestate` headers (`None` without them, or when
    /// malformed). The loop's `process` span (feature `otel`) links to it.
    pub trace: Option<TraceContext>,
}

/// A message given up on: what the poison hook receives.
#[derive(Debug, Clone)]
pub struct Poisoned {
    /// The delivery that failed last.
    pub delivery: Delivery,
    /// Its last error, as text.
    pub error: String,
}

/// Called once per poison message, after it was dead-lettered (AMQP: rejected
/// without requeue, so a queue with `x-dead-letter-exchange` routes it there)
/// or terminated (NATS `AckKind::Term`).
pub type PoisonHook = Arc<dyn Fn(&Poisoned) + Send + Sync>;

/// How a consumer loop runs.
#[derive(Clone)]
pub struct ConsumerOptions {
    /// The consumer's name: the `consumer` label of its metrics, the AMQP
    /// consumer tag.
    pub name: String,
    /// Messages the broker may hand over unacknowledged (AMQP `basic.qos`,
    /// the NATS pull batch). Default 32; a batch loop raises it to
    /// `size × concurrency`.
    pub prefetch: u16,
    /// Handlers running at once (batches, for a batch loop). Default 8; at
    /// least 1, at most tokio's `Semaphore::MAX_PERMITS`.
    pub concurrency: usize,
    /// Deliveries a message may fail before it is poison. Default 5.
    pub max_deliveries: u32,
    /// Pause before a failed message goes back (so a failing message does not
    /// spin). Default 100 ms.
    pub retry_delay: Duration,
    /// First reconnect pause, doubled up to `reconnect_max`. Default 100 ms.
    /// Every duration here saturates: `Duration::MAX` means "never again"
    /// (until shutdown), not a panic.
    pub reconnect_min: Duration,
    /// Longest reconnect pause. Default 10 s.
    pub reconnect_max: Duration,
    /// Called for each poison message.
    pub on_poison: Option<PoisonHook>,
    /// Live counters (clone the `Arc` to watch them).
    pub counters: Arc<Counters>,
}

impl std::fmt::Debug for ConsumerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumerOptions")
            .field("name", &self.name)
            .field("prefetch", &self.prefetch)
            .field("concurrency", &self.concurrency)
            .field("max_deliveries", &self.max_deliveries)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl ConsumerOptions {
    /// The defaults for a consumer called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        ConsumerOptions {
            name: name.into(),
            prefetch: 32,
            concurrency: 8,
            max_deliveries: 5,
            retry_delay: Duration::from_millis(100),
            reconnect_min: Duration::from_millis(100),
            reconnect_max: Duration::from_secs(10),
            on_poison: None,
            counters: Arc::default(),
        }
    }
}

/// What a consumer loop did so far.
#[derive(Debug, Default)]
pub struct Counters {
    /// Deliveries received.
    pub delivered: AtomicU64,
    /// Deliveries acknowledged after the handler returned `Ok`.
    pub acked: AtomicU64,
    /// Deliveries the broker marked as delivered before.
    pub redelivered: AtomicU64,
    /// Failed deliveries sent back for another attempt.
    pub retried: AtomicU64,
    /// Messages given up on (dead-lettered or terminated).
    pub poisoned: AtomicU64,
    /// Connections (re)established.
    pub connects: AtomicU64,
}

impl Counters {
    /// Reads one counter.
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// Asks consumer loops to stop: see [`shutdown`].
#[derive(Debug, Clone)]
pub struct Shutdown(Arc<tokio::sync::watch::Sender<bool>>);

/// What a consumer loop watches for [`Shutdown::trigger`].
#[derive(Debug, Clone)]
pub struct ShutdownSignal(tokio::sync::watch::Receiver<bool>);

/// A shutdown switch and its signal. After `trigger`, a loop takes no new
/// delivery, lets the running handlers finish and acknowledge, and returns;
/// deliveries the broker sent but no handler started are not acknowledged, so
/// the broker redelivers them (AMQP at once when the channel closes, NATS after
/// `ack_wait`): none is lost.
pub fn shutdown() -> (Shutdown, ShutdownSignal) {
    let (tx, rx) = tokio::sync::watch::channel(false);
    (Shutdown(Arc::new(tx)), ShutdownSignal(rx))
}

impl Shutdown {
    /// Stops every loop watching this switch's signal.
    pub fn trigger(&self) {
        self.0.send_replace(true);
    }
}

impl ShutdownSignal {
    /// True once triggered.
    pub fn is_triggered(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves when triggered (at once if it was). A dropped switch counts as
    /// never triggering.
    pub async fn triggered(&mut self) {
        if self.0.wait_for(|v| *v).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// How one delivery ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The handler committed: acknowledge.
    Ack,
    /// It failed: back to the broker for another attempt.
    Retry,
    /// It failed on its last allowed attempt: dead-letter or terminate.
    Poison,
}

/// Runs the handler on one delivery and decides its verdict, counting it.
/// A `Retry` is returned at once: the pause before the message goes back is
/// the loop's (see `pump`), so a batch pauses once, after its acks.
pub(crate) async fn judge<H, Fut, E>(opts: &ConsumerOptions, handler: &H, d: Delivery) -> Verdict
where
    H: Fn(Delivery) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    received(opts, &d);
    let keep = opts.on_poison.as_ref().map(|_| d.clone());
    let attempt = d.attempt;
    let out = handler(d).await;
    decide(opts, attempt, out, move || keep)
}

/// Counts a delivery handed to a handler (and a redelivery as such).
pub(crate) fn received(opts: &ConsumerOptions, d: &Delivery) {
    let c = &opts.counters;
    bump(&c.delivered);
    if d.redelivered {
        bump(&c.redelivered);
        count_delivery(&opts.name, DeliveryEvent::Redelivered);
    }
}

/// The verdict on one delivery whose handling ended with `out`, on its
/// `attempt`: `Ack`; `Retry`, counted; or, on the last allowed attempt,
/// `Poison`, counted, logged and handed to the hook (`keep` gives the
/// delivery for it, called only then).
pub(crate) fn decide<E: std::fmt::Display>(
    opts: &ConsumerOptions,
    attempt: u32,
    out: Result<(), E>,
    keep: impl FnOnce() -> Option<Delivery>,
) -> Verdict {
    let c = &opts.counters;
    match out {
        Ok(()) => Verdict::Ack,
        Err(e) if attempt >= opts.max_deliveries => {
            bump(&c.poisoned);
            count_delivery(&opts.name, DeliveryEvent::Poison);
            tracing::error!(consumer = %opts.name, attempt, error = %e, "idem: poison message given up on");
            if let Some(hook) = &opts.on_poison
                && let Some(delivery) = keep()
            {
                hook(&Poisoned {
                    delivery,
                    error: e.to_string(),
                });
            }
            Verdict::Poison
        }
        Err(e) => {
            bump(&c.retried);
            count_delivery(&opts.name, DeliveryEvent::Retried);
            tracing::warn!(consumer = %opts.name, attempt, error = %e, "idem: handler failed; the message goes back");
            Verdict::Retry
        }
    }
}

/// Counts an acknowledgement that reached the broker.
pub(crate) fn acked(opts: &ConsumerOptions) {
    bump(&opts.counters.acked);
}

/// Counts a connection.
pub(crate) fn connected(opts: &ConsumerOptions) {
    bump(&opts.counters.connects);
}

/// Reconnect pauses: doubling from `reconnect_min` to `reconnect_max`, reset
/// by a session that received anything.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
    min: Duration,
    max: Duration,
}

impl Backoff {
    pub(crate) fn new(opts: &ConsumerOptions) -> Self {
        Backoff {
            next: opts.reconnect_min,
            min: opts.reconnect_min,
            max: opts.reconnect_max.max(opts.reconnect_min),
        }
    }

    pub(crate) fn reset(&mut self) {
        self.next = self.min;
    }

    /// Waits the next pause, or until shutdown; false when shutting down.
    pub(crate) async fn wait(&mut self, signal: &mut ShutdownSignal) -> bool {
        let pause = self.next;
        // Saturating: a configured pause past `Duration::MAX / 2` must not
        // panic here (issue 24 l); tokio's sleep saturates the deadline too.
        self.next = self.next.saturating_mul(2).min(self.max);
        tokio::select! {
            _ = tokio::time::sleep(pause) => !signal.is_triggered(),
            _ = signal.triggered() => false,
        }
    }
}

/// Failures per message id, for brokers that do not count deliveries (classic
/// RabbitMQ queues): bounded, forgotten on success or poison. A message
/// without an id is counted under [`Failures::anonymous`].
#[cfg(feature = "rabbitmq")]
#[derive(Debug, Default)]
pub(crate) struct Failures(std::sync::Mutex<std::collections::HashMap<String, u32>>);

/// Ids remembered at most; past it the map is cleared (attempts then restart
/// from the broker's own information, never loop forever: each id still
/// needs `max_deliveries` failures in a row to be poison).
#[cfg(feature = "rabbitmq")]
const MAX_REMEMBERED: usize = 100_000;

#[cfg(feature = "rabbitmq")]
impl Failures {
    fn map(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, u32>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The key a message without an id is counted under: a hash of what
    /// identifies it on the broker (its routing and properties) and its body.
    /// Two identical messages without ids share one count; that only makes
    /// them poison sooner, never redelivered for ever (issue 24 k).
    pub(crate) fn anonymous(parts: &[&[u8]]) -> String {
        let mut h = blake3::Hasher::new();
        for p in parts {
            h.update(&(p.len() as u64).to_le_bytes());
            h.update(p);
        }
        // A NUL cannot start a broker's message id as idem reads them.
        format!("\0body:{}", h.finalize().to_hex())
    }

    /// Failures so far of `id`.
    pub(crate) fn get(&self, id: &str) -> u32 {
        self.map().get(id).copied().unwrap_or(0)
    }

    /// Records the verdict on `id`.
    pub(crate) fn settle(&self, id: &str, v: Verdict) {
        let mut m = self.map();
        match v {
            Verdict::Retry => {
                if m.len() >= MAX_REMEMBERED {
                    m.clear();
                }
                let n = m.entry(id.to_owned()).or_default();
                *n = n.saturating_add(1);
            }
            Verdict::Ack | Verdict::Poison => {
                m.remove(id);
            }
        }
    }
}
