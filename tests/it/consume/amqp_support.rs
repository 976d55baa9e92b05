//! RabbitMQ fixtures of the consume tests: a channel on the machine's broker,
//! random queues deleted on drop, publishing with message ids.

use std::time::{Duration, Instant};

use lapin::options::{BasicPublishOptions, QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};

use crate::consume::handler::RefundMsg;

pub(crate) fn amqp_url() -> String {
    std::env::var("IDEM_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// A channel on the machine's RabbitMQ (the test fails without one).
pub(crate) async fn channel() -> (Connection, Channel) {
    let conn = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .unwrap_or_else(|e| panic!("RabbitMQ at {} is required: {e}", amqp_url()));
    let ch = conn.create_channel().await.expect("channel");
    (conn, ch)
}

/// A fresh queue (optionally dead-lettering to `dlq`), deleted on drop.
pub(crate) struct TestQueue {
    pub(crate) name: String,
    extra: Vec<String>,
}

impl TestQueue {
    pub(crate) async fn new(ch: &Channel, dlq: bool) -> TestQueue {
        let name = format!("idem-t-{}", uuid::Uuid::new_v4().simple());
        let mut args = FieldTable::default();
        let mut extra = Vec::new();
        if dlq {
            let dead = format!("{name}-dead");
            ch.queue_declare(
                dead.as_str().into(),
                QueueDeclareOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("declare dead-letter queue");
            args.insert(
                "x-dead-letter-exchange".into(),
                AMQPValue::LongString("".into()),
            );
            args.insert(
                "x-dead-letter-routing-key".into(),
                AMQPValue::LongString(dead.as_str().into()),
            );
            extra.push(dead);
        }
        ch.queue_declare(name.as_str().into(), QueueDeclareOptions::default(), args)
            .await
            .expect("declare queue");
        TestQueue { name, extra }
    }

    pub(crate) fn dead(&self) -> &str {
        &self.extra[0]
    }
}

impl Drop for TestQueue {
    fn drop(&mut self) {
        let names: Vec<String> = std::iter::once(self.name.clone())
            .chain(self.extra.clone())
            .collect();
        let _ = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async move {
                    let (conn, ch) = channel().await;
                    for n in names {
                        let _ = ch
                            .queue_delete(n.as_str().into(), QueueDeleteOptions::default())
                            .await;
                    }
                    let _ = conn.close(200, "bye".into()).await;
                })
        })
        .join();
    }
}

/// Messages waiting in `queue` (ready, not unacknowledged).
pub(crate) async fn depth(ch: &Channel, queue: &str) -> u32 {
    let q = ch
        .queue_declare(
            queue.into(),
            QueueDeclareOptions {
                passive: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .expect("passive declare");
    q.message_count()
}

pub(crate) async fn publish(ch: &Channel, queue: &str, id: &str, msg: &RefundMsg) {
    publish_bytes(ch, queue, id, &serde_json::to_vec(msg).unwrap()).await;
}

/// Publishes `body` to `queue` with the message id `id`.
pub(crate) async fn publish_bytes(ch: &Channel, queue: &str, id: &str, body: &[u8]) {
    ch.basic_publish(
        "".into(),
        queue.into(),
        BasicPublishOptions::default(),
        body,
        BasicProperties::default().with_message_id(id.into()),
    )
    .await
    .expect("publish");
}

/// Waits until `queue` holds `n` ready messages.
pub(crate) async fn wait_depth(ch: &Channel, queue: &str, n: u32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while depth(ch, queue).await < n {
        assert!(
            Instant::now() < deadline,
            "the broker did not take all messages"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// 1,000 messages about 800 orders: 100 re-sent with the same id, 100 about
/// an earlier order under a new id. Returns the distinct order count.
pub(crate) async fn publish_with_duplicates(ch: &Channel, queue: &str, total: usize) -> usize {
    let orders = total * 4 / 5;
    let msg = |i: usize| RefundMsg {
        id: String::new(),
        order_no: format!("o-{i}"),
        slow_ms: 0,
    };
    for i in 0..orders {
        publish(ch, queue, &format!("m-{i}"), &msg(i)).await;
        // Every 8th order is published twice more: the same id, and a new id.
        if i % 8 == 0 {
            publish(ch, queue, &format!("m-{i}"), &msg(i)).await;
            publish(ch, queue, &format!("m-{i}-again"), &msg(i)).await;
        }
    }
    wait_depth(ch, queue, total as u32).await;
    orders
}
