//! A RabbitMQ consumer loop (feature `rabbitmq`, `lapin`): prefetch through
//! `basic.qos`, at most `concurrency` handlers at once, acknowledgement only
//! after the handler returned `Ok` (after its commit), `basic.nack` with
//! requeue on an error, reject without requeue (dead-letter) after
//! `max_deliveries`, reconnection with backoff, graceful shutdown.
//!
//! ```text
//! let opts = ConsumerOptions::new("refund");
//! let (stop, signal) = idem::consume::shutdown();
//! idem::consume::amqp::run("amqp://127.0.0.1:5672/%2f", "refunds", opts, signal,
//!     move |d: Delivery| { let pool = pool.clone(); async move {
//!         let mut tx = pool.begin().await?;
//!         on_refund(&mut tx, &parse(&d)?).await?;   // #[consume_once]
//!         tx.commit().await                        // Ok: the loop acks
//!     }}).await;
//! ```
//!
//! Delivery counts: quorum queues send `x-delivery-count`, which is used;
//! classic queues only flag `redelivered`, so failures are also counted per
//! message id in this process, and per content (a hash of routing, properties
//! and body) for a message published without an id. Without a dead-letter exchange on the queue a
//! poison message is dropped by the broker, after the hook saw it.

use std::future::Future;
use std::sync::Arc;

use lapin::Acker;
use lapin::options::{
    BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions,
    BasicRejectOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Connection, ConnectionProperties};

use super::pump::{Each, Inbound, Process, Settle, Source, fit_prefetch, pump};
use super::worker::{
    Backoff, ConsumerOptions, Delivery, Failures, ShutdownSignal, Verdict, connected,
};
use crate::observe::{TRACEPARENT, TRACESTATE, TraceContext};

/// Consumes `queue` at `url` until `signal` is triggered; see the module docs.
/// Connection and channel failures are retried with backoff (logged), never
/// returned.
pub async fn run<H, Fut, E>(
    url: &str,
    queue: &str,
    opts: ConsumerOptions,
    signal: ShutdownSignal,
    handler: H,
) where
    H: Fn(Delivery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    serve(url, queue, opts, signal, Arc::new(Each(handler))).await;
}

/// Consumes `queue` at `url` in batches through the consume log until
/// `signal` is triggered: see [`Batch`](super::Batch). The channel's
/// prefetch is raised to fill every batch in flight (`size × concurrency`)
/// when it is smaller.
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub async fn run_batch<H: super::BatchHandler>(
    url: &str,
    queue: &str,
    opts: ConsumerOptions,
    signal: ShutdownSignal,
    batch: super::Batch<H>,
) {
    serve(url, queue, opts, signal, Arc::new(batch)).await;
}

/// The loop of sessions, reconnecting with backoff.
async fn serve<P: Process>(
    url: &str,
    queue: &str,
    mut opts: ConsumerOptions,
    mut signal: ShutdownSignal,
    process: Arc<P>,
) {
    fit_prefetch(&mut opts, process.size());
    let opts = Arc::new(opts);
    let failures = Arc::new(Failures::default());
    let mut backoff = Backoff::new(&opts);
    while !signal.is_triggered() {
        match session(url, queue, &opts, &mut signal, &process, &failures).await {
            Ok(got_any) => {
                if got_any {
                    backoff.reset();
                }
            }
            Err(e) => tracing::warn!(consumer = %opts.name, error = %e, "idem: AMQP session ended"),
        }
        if signal.is_triggered() || !backoff.wait(&mut signal).await {
            break;
        }
    }
}

/// One connection: consume until the stream ends, fails or shutdown. Returns
/// whether anything was delivered.
async fn session<P: Process>(
    url: &str,
    queue: &str,
    opts: &Arc<ConsumerOptions>,
    signal: &mut ShutdownSignal,
    process: &Arc<P>,
    failures: &Arc<Failures>,
) -> Result<bool, lapin::Error> {
    let conn = Connection::connect(url, ConnectionProperties::default()).await?;
    let channel = conn.create_channel().await?;
    channel
        .basic_qos(opts.prefetch, BasicQosOptions::default())
        .await?;
    let tag = format!("{}-{}", opts.name, uuid::Uuid::new_v4().simple());
    let mut consumer = channel
        .basic_consume(
            queue.into(),
            tag.as_str().into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    connected(opts);
    let pumped = pump(
        &mut consumer,
        |d| inbound(d, failures),
        &Source::new("rabbitmq", queue),
        opts,
        signal,
        process,
    )
    .await;
    // Stop new deliveries, let running handlers finish and settle, then close:
    // whatever was prefetched but not started is requeued by the broker.
    if signal.is_triggered() {
        let _ = channel
            .basic_cancel(tag.as_str().into(), BasicCancelOptions::default())
            .await;
    }
    pumped.inflight.drain().await;
    let _ = channel.close(200, "idem consumer stopped".into()).await;
    let _ = conn.close(200, "idem consumer stopped".into()).await;
    pumped.ended.map(|()| pumped.got_any)
}

/// A lapin delivery as a handler sees it, with its attempt.
fn inbound(d: lapin::message::Delivery, failures: &Arc<Failures>) -> Inbound<AmqpSettle> {
    let id = d.properties.message_id().as_ref().map(|s| s.to_string());
    // Counted per message id, or per content without one: a classic queue
    // says only `redelivered`, and an uncounted message failing every time
    // was redelivered for ever.
    let counted = id.clone().unwrap_or_else(|| {
        let props = format!("{:?}", d.properties);
        Failures::anonymous(&[
            d.exchange.as_str().as_bytes(),
            d.routing_key.as_str().as_bytes(),
            props.as_bytes(),
            &d.data,
        ])
    });
    let local = failures.get(&counted);
    let attempt = delivery_count(&d).max(local.saturating_add(1));
    let trace = trace_context(&d);
    Inbound {
        delivery: Delivery {
            id,
            payload: d.data,
            attempt,
            redelivered: d.redelivered,
            trace,
        },
        settle: AmqpSettle {
            acker: d.acker,
            counted,
            failures: failures.clone(),
        },
    }
}

/// How a verdict reaches RabbitMQ: `basic.ack`, `basic.nack` with requeue,
/// or `basic.reject` without (dead-letter); the local failure count follows.
struct AmqpSettle {
    acker: Acker,
    counted: String,
    failures: Arc<Failures>,
}

impl Settle for AmqpSettle {
    async fn settle(self, verdict: Verdict) -> Result<(), String> {
        self.failures.settle(&self.counted, verdict);
        let sent = match verdict {
            Verdict::Ack => self.acker.ack(BasicAckOptions::default()).await,
            Verdict::Retry => {
                let requeue = BasicNackOptions {
                    requeue: true,
                    ..Default::default()
                };
                self.acker.nack(requeue).await
            }
            Verdict::Poison => {
                self.acker
                    .reject(BasicRejectOptions { requeue: false })
                    .await
            }
        };
        sent.map(drop).map_err(|e| e.to_string())
    }
}

/// The creation's trace context from the `traceparent` and `tracestate`
/// headers (string values; anything else is ignored).
fn trace_context(d: &lapin::message::Delivery) -> Option<TraceContext> {
    let headers = d.properties.headers().as_ref()?;
    let text = |name: &str| match headers.inner().get(name) {
        Some(AMQPValue::LongString(s)) => std::str::from_utf8(s.as_bytes()).ok().map(str::to_owned),
        Some(AMQPValue::ShortString(s)) => Some(s.as_str().to_owned()),
        _ => None,
    };
    TraceContext::parse(&text(TRACEPARENT)?, text(TRACESTATE).as_deref())
}

/// The broker's delivery count (quorum queues: `x-delivery-count`, the number
/// of earlier deliveries) as this delivery's attempt, from 1.
fn delivery_count(d: &lapin::message::Delivery) -> u32 {
    let earlier = d
        .properties
        .headers()
        .as_ref()
        .and_then(|h| h.inner().get("x-delivery-count").cloned())
        .and_then(|v| match v {
            AMQPValue::LongLongInt(n) => u32::try_from(n).ok(),
            AMQPValue::LongInt(n) => u32::try_from(n).ok(),
            AMQPValue::LongUInt(n) => Some(n),
            AMQPValue::ShortInt(n) => u32::try_from(n).ok(),
            _ => None,
        })
        .unwrap_or(0);
    earlier + 1
}
