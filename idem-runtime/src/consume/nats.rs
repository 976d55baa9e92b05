//! A NATS JetStream consumer loop (feature `nats`, `async-nats`) over a
//! durable pull consumer: batches of `prefetch` messages, at most
//! `concurrency` handlers at once, acknowledgement only after the handler
//! returned `Ok` (after its commit), `Nak` on an error, `Term` after
//! `max_deliveries` (JetStream's own `delivered` count), re-subscription with
//! backoff, graceful shutdown.
//!
//! Message ids come from the `Nats-Msg-Id` header (which the server also uses
//! for its publish-side duplicate window). A body that outlives the
//! consumer's `ack_wait` is redelivered while it still runs: the second
//! delivery waits on the consume log's unique key until the first commits,
//! then finds it (a duplicate), so the effect still happens once.

use std::future::Future;
use std::sync::Arc;

use async_nats::jetstream::{self, AckKind, consumer::PullConsumer};

use super::pump::{Each, Inbound, Process, Settle, Source, fit_prefetch, pump};
use super::worker::{Backoff, ConsumerOptions, Delivery, ShutdownSignal, Verdict, connected};
use crate::observe::{TRACEPARENT, TRACESTATE, TraceContext};

/// The message id header.
pub const MSG_ID_HEADER: &str = "Nats-Msg-Id";

/// Consumes the durable pull consumer `consumer` of `stream` through `client`
/// until `signal` is triggered; see the module docs. Failures to reach the
/// consumer are retried with backoff (logged), never returned.
pub async fn run<H, Fut, E>(
    client: async_nats::Client,
    stream: &str,
    consumer: &str,
    opts: ConsumerOptions,
    signal: ShutdownSignal,
    handler: H,
) where
    H: Fn(Delivery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let each = Arc::new(Each(handler));
    serve(client, stream, consumer, opts, signal, each).await;
}

/// Consumes the durable pull consumer `consumer` of `stream` in batches
/// through the consume log until `signal` is triggered: see
/// [`Batch`](super::Batch). Pull requests ask for enough messages to fill
/// every batch in flight (`size × concurrency`).
/// Keep the consumer's `ack_wait` above a batch's time: a message whose ack
/// is late is redelivered, and then found in the log.
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub async fn run_batch<H: super::BatchHandler>(
    client: async_nats::Client,
    stream: &str,
    consumer: &str,
    opts: ConsumerOptions,
    signal: ShutdownSignal,
    batch: super::Batch<H>,
) {
    serve(client, stream, consumer, opts, signal, Arc::new(batch)).await;
}

/// The loop of sessions, re-subscribing with backoff.
async fn serve<P: Process>(
    client: async_nats::Client,
    stream: &str,
    consumer: &str,
    mut opts: ConsumerOptions,
    mut signal: ShutdownSignal,
    process: Arc<P>,
) {
    fit_prefetch(&mut opts, process.size());
    let js = jetstream::new(client);
    let opts = Arc::new(opts);
    let mut backoff = Backoff::new(&opts);
    while !signal.is_triggered() {
        match session(&js, stream, consumer, &opts, &mut signal, &process).await {
            Ok(true) => backoff.reset(),
            Ok(false) => {}
            Err(e) => tracing::warn!(consumer = %opts.name, error = %e, "idem: NATS session ended"),
        }
        if signal.is_triggered() || !backoff.wait(&mut signal).await {
            break;
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

async fn session<P: Process>(
    js: &jetstream::Context,
    stream: &str,
    consumer: &str,
    opts: &Arc<ConsumerOptions>,
    signal: &mut ShutdownSignal,
    process: &Arc<P>,
) -> Result<bool, BoxError> {
    let c: PullConsumer = js.get_stream(stream).await?.get_consumer(consumer).await?;
    let mut messages = c
        .stream()
        .max_messages_per_batch(usize::from(opts.prefetch.max(1)))
        .messages()
        .await?;
    connected(opts);
    let source = Source::new("nats", stream);
    let pumped = pump(&mut messages, inbound, &source, opts, signal, process).await;
    // Running handlers finish and settle; messages pulled but not started are
    // redelivered after `ack_wait`.
    pumped.inflight.drain().await;
    match pumped.ended {
        Ok(()) => Ok(pumped.got_any),
        Err(e) => Err(Box::new(e)),
    }
}

/// A JetStream message as a handler sees it: its attempt is the server's
/// `delivered` count.
fn inbound(m: jetstream::Message) -> Inbound<NatsSettle> {
    let id = m
        .headers
        .as_ref()
        .and_then(|h| h.get(MSG_ID_HEADER))
        .map(|v| v.as_str().to_owned());
    let delivered = m.info().map(|i| i.delivered).unwrap_or(1);
    let header = |name: &str| {
        m.headers
            .as_ref()
            .and_then(|h| h.get(name))
            .map(|v| v.as_str())
    };
    let trace = header(TRACEPARENT).and_then(|tp| TraceContext::parse(tp, header(TRACESTATE)));
    Inbound {
        delivery: Delivery {
            id,
            payload: m.payload.to_vec(),
            attempt: u32::try_from(delivered).unwrap_or(u32::MAX).max(1),
            redelivered: delivered > 1,
            trace,
        },
        settle: NatsSettle(m),
    }
}

/// How a verdict reaches JetStream: `Ack`, `Nak`, or `Term`. A lost one is
/// redelivered after `ack_wait`, and the consume log finds the message.
struct NatsSettle(jetstream::Message);

impl Settle for NatsSettle {
    async fn settle(self, verdict: Verdict) -> Result<(), String> {
        let sent = match verdict {
            Verdict::Ack => self.0.ack().await,
            Verdict::Retry => self.0.ack_with(AckKind::Nak(None)).await,
            Verdict::Poison => self.0.ack_with(AckKind::Term).await,
        };
        sent.map_err(|e| e.to_string())
    }
}
