//! The one session loop of both brokers and both handler shapes: take a unit
//! of deliveries from the broker's stream (one, or up to a batch's size),
//! run it on a free slot, and settle each delivery by its verdict: the acks
//! and dead-letters first, then, after one `retry_delay`, the retries.
//!
//! A broker module only opens its stream and says how one of its deliveries
//! becomes a [`Delivery`] and how a verdict reaches it ([`Settle`]); a
//! handler shape only says how a unit is processed ([`Process`]): a handler
//! per message ([`Each`]), or a batch through the consume log.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt as _};

use super::worker::{ConsumerOptions, Delivery, ShutdownSignal, Verdict, acked, judge};
use crate::observe::messaging::MsgSpan;

/// Where a session's deliveries come from, as its `process` spans name it:
/// the broker (`messaging.system`) and the queue or stream consumed
/// (`messaging.destination.name`).
#[derive(Debug)]
pub(crate) struct Source {
    system: &'static str,
    destination: Arc<str>,
}

impl Source {
    pub(crate) fn new(system: &'static str, destination: &str) -> Source {
        Source {
            system,
            destination: destination.into(),
        }
    }

    /// The `process` span of `unit`: linked to each delivery's creation
    /// context (nothing without the `otel` feature).
    fn span<S>(&self, opts: &ConsumerOptions, unit: &[Inbound<S>]) -> MsgSpan {
        let members = unit
            .iter()
            .map(|i| (i.delivery.id.as_deref(), i.delivery.trace.as_ref()));
        MsgSpan::process(self.system, &self.destination, &opts.name, members)
    }
}

/// One delivery in hand: what a handler sees, and how to settle it.
pub(crate) struct Inbound<S> {
    pub(crate) delivery: Delivery,
    pub(crate) settle: S,
}

/// How a verdict reaches the broker for one delivery.
pub(crate) trait Settle: Send + 'static {
    /// Acknowledges, sends back for another attempt, or dead-letters; an
    /// error (as text) when the broker could not be told.
    fn settle(self, verdict: Verdict) -> impl Future<Output = Result<(), String>> + Send;
}

/// How a unit of deliveries is processed into one verdict per delivery, in
/// order.
pub(crate) trait Process: Send + Sync + 'static {
    /// Deliveries per unit at most (at least 1).
    fn size(&self) -> usize;
    /// How long a unit waits for more deliveries once it has one.
    fn linger(&self) -> Duration;
    /// Runs the unit; one verdict per delivery, in order.
    fn process(
        &self,
        opts: &ConsumerOptions,
        unit: Vec<Delivery>,
    ) -> impl Future<Output = Vec<Verdict>> + Send;
}

/// A batch loop asks its broker for enough messages to fill every batch in
/// flight: a prefetch of at least `size × concurrency`. A loop per message
/// keeps the configured one.
pub(crate) fn fit_prefetch(opts: &mut ConsumerOptions, size: usize) {
    if size > 1 {
        let want = size.saturating_mul(opts.concurrency.max(1));
        opts.prefetch = opts.prefetch.max(u16::try_from(want).unwrap_or(u16::MAX));
    }
}

/// A handler per message: units of one.
pub(crate) struct Each<H>(pub(crate) H);

impl<H, Fut, E> Process for Each<H>
where
    H: Fn(Delivery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    fn size(&self) -> usize {
        1
    }

    fn linger(&self) -> Duration {
        Duration::ZERO
    }

    async fn process(&self, opts: &ConsumerOptions, unit: Vec<Delivery>) -> Vec<Verdict> {
        let mut out = Vec::with_capacity(unit.len());
        for d in unit {
            out.push(judge(opts, &self.0, d).await);
        }
        out
    }
}

/// How a session's loop ended: the stream's end or error, whether anything
/// was delivered, and the units still running (drain them).
pub(crate) struct Pumped<E> {
    pub(crate) ended: Result<(), E>,
    pub(crate) got_any: bool,
    pub(crate) inflight: InFlight,
}

/// Takes units from `stream` until it ends, fails or `signal` triggers, each
/// run on one of `concurrency` slots and settled there. A unit waits for a
/// slot before its first delivery, then up to `linger` for the rest; a
/// shutdown while it fills runs what it holds.
pub(crate) async fn pump<St, R, E, S, P>(
    stream: &mut St,
    inbound: impl Fn(R) -> Inbound<S>,
    source: &Source,
    opts: &Arc<ConsumerOptions>,
    signal: &mut ShutdownSignal,
    process: &Arc<P>,
) -> Pumped<E>
where
    St: Stream<Item = Result<R, E>> + Unpin,
    S: Settle,
    P: Process,
{
    let mut inflight = InFlight::new(opts);
    let mut got_any = false;
    let size = process.size().max(1);
    let ended = loop {
        let Some(slot) = inflight.slot(signal).await else {
            break Ok(());
        };
        let next = tokio::select! {
            n = stream.next() => n,
            _ = signal.triggered() => break Ok(()),
        };
        let mut unit = match next {
            Some(Ok(r)) => vec![inbound(r)],
            Some(Err(e)) => break Err(e),
            None => break Ok(()),
        };
        got_any = true;
        let mut stop = None;
        if size > 1 {
            let deadline = tokio::time::Instant::now() + process.linger();
            while unit.len() < size {
                let next = tokio::select! {
                    biased;
                    n = stream.next() => n,
                    _ = tokio::time::sleep_until(deadline) => break,
                    _ = signal.triggered() => break,
                };
                match next {
                    Some(Ok(r)) => unit.push(inbound(r)),
                    Some(Err(e)) => {
                        stop = Some(Err(e));
                        break;
                    }
                    None => {
                        stop = Some(Ok(()));
                        break;
                    }
                }
            }
        }
        let span = source.span(opts, &unit);
        inflight.spawn(slot, run_unit(opts.clone(), process.clone(), unit, span));
        if let Some(stop) = stop {
            break stop;
        }
    };
    Pumped {
        ended,
        got_any,
        inflight,
    }
}

/// Processes one unit and settles its deliveries: acks and dead-letters at
/// once, retries after one `retry_delay` (so a failing message does not
/// spin, and the unit's acks do not wait for that pause).
async fn run_unit<S: Settle, P: Process>(
    opts: Arc<ConsumerOptions>,
    process: Arc<P>,
    unit: Vec<Inbound<S>>,
    span: MsgSpan,
) {
    let (deliveries, settles): (Vec<_>, Vec<_>) =
        unit.into_iter().map(|i| (i.delivery, i.settle)).unzip();
    let verdicts = span.run(process.process(&opts, deliveries)).await;
    let mut later = Vec::new();
    for (i, s) in settles.into_iter().enumerate() {
        // A delivery without a verdict goes back: never acknowledged unseen.
        match verdicts.get(i).copied().unwrap_or(Verdict::Retry) {
            Verdict::Retry => later.push(s),
            v => send(&opts, s, v).await,
        }
    }
    if !later.is_empty() {
        tokio::time::sleep(opts.retry_delay).await;
        for s in later {
            send(&opts, s, Verdict::Retry).await;
        }
    }
}

async fn send<S: Settle>(opts: &ConsumerOptions, s: S, v: Verdict) {
    match s.settle(v).await {
        Ok(()) if v == Verdict::Ack => acked(opts),
        Ok(()) => {}
        // The channel or connection is gone: the broker redelivers the
        // message, and the consume log finds it.
        Err(e) => {
            tracing::warn!(consumer = %opts.name, error = %e, "idem: settling a delivery failed")
        }
    }
}

/// The handlers of one session: at most `concurrency` at once.
#[derive(Debug)]
pub(crate) struct InFlight {
    permits: Arc<tokio::sync::Semaphore>,
    tasks: tokio::task::JoinSet<()>,
}

impl InFlight {
    pub(crate) fn new(opts: &ConsumerOptions) -> Self {
        InFlight {
            // Clamped: a semaphore refuses (panics on) more than MAX_PERMITS.
            permits: Arc::new(tokio::sync::Semaphore::new(
                opts.concurrency
                    .clamp(1, tokio::sync::Semaphore::MAX_PERMITS),
            )),
            tasks: tokio::task::JoinSet::new(),
        }
    }

    /// Waits for a free slot (or shutdown: `None`).
    pub(crate) async fn slot(
        &mut self,
        signal: &mut ShutdownSignal,
    ) -> Option<tokio::sync::OwnedSemaphorePermit> {
        // Reap finished tasks so the set does not grow.
        while self.tasks.try_join_next().is_some() {}
        tokio::select! {
            p = Arc::clone(&self.permits).acquire_owned() => p.ok(),
            _ = signal.triggered() => None,
        }
    }

    /// Runs one delivery's work, holding `slot` until it ends.
    pub(crate) fn spawn<F>(&mut self, slot: tokio::sync::OwnedSemaphorePermit, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tasks.spawn(async move {
            work.await;
            drop(slot);
        });
    }

    /// Waits for every running handler to finish and settle its delivery.
    pub(crate) async fn drain(mut self) {
        while self.tasks.join_next().await.is_some() {}
    }
}
