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
use futures_util::StreamExt as _;

use super::worker::{
    Backoff, ConsumerOptions, Delivery, InFlight, ShutdownSignal, Verdict, acked, connected, judge,
};

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
    mut signal: ShutdownSignal,
    handler: H,
) where
    H: Fn(Delivery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let js = jetstream::new(client);
    let handler = Arc::new(handler);
    let opts = Arc::new(opts);
    let mut backoff = Backoff::new(&opts);
    while !signal.is_triggered() {
        match session(&js, stream, consumer, &opts, &mut signal, &handler).await {
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

async fn session<H, Fut, E>(
    js: &jetstream::Context,
    stream: &str,
    consumer: &str,
    opts: &Arc<ConsumerOptions>,
    signal: &mut ShutdownSignal,
    handler: &Arc<H>,
) -> Result<bool, BoxError>
where
    H: Fn(Delivery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let c: PullConsumer = js.get_stream(stream).await?.get_consumer(consumer).await?;
    let mut messages = c
        .stream()
        .max_messages_per_batch(usize::from(opts.prefetch.max(1)))
        .messages()
        .await?;
    connected(opts);
    let mut inflight = InFlight::new(opts);
    let mut got_any = false;
    let ended: Result<(), BoxError> = loop {
        let Some(slot) = inflight.slot(signal).await else {
            break Ok(());
        };
        let next = tokio::select! {
            n = messages.next() => n,
            _ = signal.triggered() => break Ok(()),
        };
        let m = match next {
            Some(Ok(m)) => m,
            Some(Err(e)) => break Err(Box::new(e)),
            None => break Ok(()),
        };
        got_any = true;
        let (opts, handler) = (opts.clone(), handler.clone());
        inflight.spawn(slot, async move {
            let id = m
                .headers
                .as_ref()
                .and_then(|h| h.get(MSG_ID_HEADER))
                .map(|v| v.as_str().to_owned());
            let delivered = m.info().map(|i| i.delivered).unwrap_or(1);
            let delivery = Delivery {
                id,
                payload: m.payload.to_vec(),
                attempt: u32::try_from(delivered).unwrap_or(u32::MAX).max(1),
                redelivered: delivered > 1,
            };
            let verdict = judge(&opts, &*handler, delivery).await;
            let sent = match verdict {
                Verdict::Ack => m.ack().await,
                Verdict::Retry => m.ack_with(AckKind::Nak(None)).await,
                Verdict::Poison => m.ack_with(AckKind::Term).await,
            };
            match sent {
                Ok(()) if verdict == Verdict::Ack => acked(&opts),
                Ok(()) => {}
                // Lost: JetStream redelivers after `ack_wait`, and the consume
                // log finds the message.
                Err(e) => tracing::warn!(error = %e, "idem: settling a NATS message failed"),
            }
        });
    };
    // Running handlers finish and settle; messages pulled but not started are
    // redelivered after `ack_wait`.
    inflight.drain().await;
    ended.map(|()| got_any)
}
