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

use futures_util::StreamExt as _;
use lapin::options::{
    BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions,
    BasicRejectOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Connection, ConnectionProperties};

use super::worker::{
    Backoff, ConsumerOptions, Delivery, Failures, InFlight, ShutdownSignal, Verdict, acked,
    connected, judge,
};

/// Consumes `queue` at `url` until `signal` is triggered; see the module docs.
/// Connection and channel failures are retried with backoff (logged), never
/// returned.
pub async fn run<H, Fut, E>(
    url: &str,
    queue: &str,
    opts: ConsumerOptions,
    mut signal: ShutdownSignal,
    handler: H,
) where
    H: Fn(Delivery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let handler = Arc::new(handler);
    let opts = Arc::new(opts);
    let failures = Arc::new(Failures::default());
    let mut backoff = Backoff::new(&opts);
    while !signal.is_triggered() {
        match session(url, queue, &opts, &mut signal, &handler, &failures).await {
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
async fn session<H, Fut, E>(
    url: &str,
    queue: &str,
    opts: &Arc<ConsumerOptions>,
    signal: &mut ShutdownSignal,
    handler: &Arc<H>,
    failures: &Arc<Failures>,
) -> Result<bool, lapin::Error>
where
    H: Fn(Delivery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
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
    let mut inflight = InFlight::new(opts);
    let mut got_any = false;
    let ended = loop {
        let Some(slot) = inflight.slot(signal).await else {
            break Ok(());
        };
        let next = tokio::select! {
            n = consumer.next() => n,
            _ = signal.triggered() => break Ok(()),
        };
        let d = match next {
            Some(Ok(d)) => d,
            Some(Err(e)) => break Err(e),
            None => break Ok(()),
        };
        got_any = true;
        let (opts, handler, failures) = (opts.clone(), handler.clone(), failures.clone());
        inflight.spawn(slot, async move {
            let id = d.properties.message_id().as_ref().map(|s| s.to_string());
            // Counted per message id, or per content without one: a classic
            // queue says only `redelivered`, and an uncounted message failing
            // every time was redelivered for ever (issue 24 k).
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
            let delivery = Delivery {
                id: id.clone(),
                payload: d.data.clone(),
                attempt,
                redelivered: d.redelivered,
            };
            let verdict = judge(&opts, &*handler, delivery).await;
            failures.settle(&counted, verdict);
            let sent = match verdict {
                Verdict::Ack => d.acker.ack(BasicAckOptions::default()).await,
                Verdict::Retry => {
                    let requeue = BasicNackOptions {
                        requeue: true,
                        ..Default::default()
                    };
                    d.acker.nack(requeue).await
                }
                Verdict::Poison => d.acker.reject(BasicRejectOptions { requeue: false }).await,
            };
            match sent {
                Ok(_) if verdict == Verdict::Ack => acked(&opts),
                Ok(_) => {}
                // The channel is gone: the broker redelivers the message,
                // which the consume log then finds.
                Err(e) => tracing::warn!(error = %e, "idem: settling an AMQP delivery failed"),
            }
        });
    };
    // Stop new deliveries, let running handlers finish and settle, then close:
    // whatever was prefetched but not started is requeued by the broker.
    if signal.is_triggered() {
        let _ = channel
            .basic_cancel(tag.as_str().into(), BasicCancelOptions::default())
            .await;
    }
    inflight.drain().await;
    let _ = channel.close(200, "idem consumer stopped".into()).await;
    let _ = conn.close(200, "idem consumer stopped".into()).await;
    ended.map(|()| got_any)
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
