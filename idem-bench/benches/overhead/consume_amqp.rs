//! Consume-once on RabbitMQ (see [`crate::consume`]): a fresh classic queue
//! per side, messages published on one shared channel with a message id.

use std::sync::Arc;

use futures_util::StreamExt as _;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions,
    QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};

use crate::Env;
use crate::consume::{
    CONCURRENCY, Consumer, Created, PREFETCH, Stop, amqp_url, created, pair, publish_and_wait,
};
use crate::harness::Side;

async fn connect() -> anyhow::Result<Connection> {
    let url = amqp_url();
    Connection::connect(&url, ConnectionProperties::default())
        .await
        .map_err(|e| anyhow::anyhow!("RabbitMQ at {url} is required: {e}"))
}

async fn channel() -> anyhow::Result<(Connection, Channel)> {
    let conn = connect().await?;
    let ch = conn.create_channel().await?;
    Ok((conn, ch))
}

async fn queue(ch: &Channel, name: &str) -> anyhow::Result<()> {
    ch.queue_declare(
        name.into(),
        QueueDeclareOptions::default(),
        FieldTable::default(),
    )
    .await?;
    created(Created::Queue(name.to_owned()));
    Ok(())
}

/// Publishes to `queue` on `ch` (the connection is kept alive with it).
fn publisher(
    conn: Arc<Connection>,
    ch: Channel,
    queue: String,
) -> impl Fn(String) -> std::pin::Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>
+ Send
+ Sync
+ 'static {
    move |id: String| {
        let (ch, queue, _conn) = (ch.clone(), queue.clone(), conn.clone());
        Box::pin(async move {
            ch.basic_publish(
                "".into(),
                queue.as_str().into(),
                BasicPublishOptions::default(),
                b"{}",
                BasicProperties::default().with_message_id(id.as_str().into()),
            )
            .await?;
            Ok(())
        })
    }
}

pub(crate) async fn sides(env: &Env) -> anyhow::Result<Vec<Side>> {
    let consumer = Consumer::new(env).await?;
    let (conn, ch) = channel().await?;
    let conn = Arc::new(conn);
    let base = format!("idem-bench-{}-{}", env.ns, env.tag);
    let (qa, qb) = (format!("{base}-a"), format!("{base}-b"));
    queue(&ch, &qa).await?;
    queue(&ch, &qb).await?;
    let a = {
        let (stop, signal) = idem::consume::shutdown();
        let mut opts = idem::consume::ConsumerOptions::new("bench-a");
        opts.prefetch = PREFETCH;
        opts.concurrency = CONCURRENCY;
        let (c, q) = (consumer.clone(), qa.clone());
        tokio::spawn(async move {
            idem::consume::amqp::run(&amqp_url(), &q, opts, signal, move |d| {
                let c = c.clone();
                async move { c.through_idem(d.id).await }
            })
            .await;
        });
        let stop = Stop::new(move || stop.trigger());
        let publish = publisher(conn.clone(), ch.clone(), qa);
        publish_and_wait(consumer.waiters.clone(), format!("{base}-a"), stop, publish)
    };
    let b = {
        let (stop, rx) = Stop::channel();
        tokio::spawn(floor(connect().await?, qb.clone(), consumer.clone(), rx));
        let publish = publisher(conn, ch, qb);
        publish_and_wait(consumer.waiters.clone(), format!("{base}-b"), stop, publish)
    };
    Ok(pair(a, b, "amqp"))
}

/// The hand-written loop: qos, consume, at most `CONCURRENCY` handlers, ack
/// after the commit. Ends when `stop` turns true (the connection closes with it).
async fn floor(
    conn: Connection,
    queue: String,
    c: Consumer,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let ch = conn.create_channel().await?;
    ch.basic_qos(PREFETCH, BasicQosOptions::default()).await?;
    let mut deliveries = ch
        .basic_consume(
            queue.as_str().into(),
            "bench-b".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let slots = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    loop {
        let slot = slots.clone().acquire_owned().await?;
        let d = tokio::select! {
            d = deliveries.next() => d,
            _ = stop.wait_for(|s| *s) => break,
        };
        let Some(d) = d else { break };
        let (d, c) = (d?, c.clone());
        tokio::spawn(async move {
            let id = d.properties.message_id().as_ref().map(|s| s.to_string());
            match c.by_hand(id).await {
                Ok(()) => {
                    let _ = d.acker.ack(BasicAckOptions::default()).await;
                }
                Err(e) => eprintln!("bench floor consumer: {e}"),
            }
            drop(slot);
        });
    }
    let _ = conn.close(200, "bench done".into()).await;
    Ok(())
}

/// Deletes the run's queues.
pub(crate) async fn delete(queues: &[Created]) -> anyhow::Result<()> {
    let (conn, ch) = channel().await?;
    for q in queues {
        if let Created::Queue(name) = q {
            ch.queue_delete(name.as_str().into(), QueueDeleteOptions::default())
                .await?;
        }
    }
    let _ = conn.close(200, "bench done".into()).await;
    Ok(())
}
