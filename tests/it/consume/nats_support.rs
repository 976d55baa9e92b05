//! NATS JetStream fixtures of the consume tests: a client on the machine's
//! server, random streams deleted on drop, publishing with message ids.

use std::time::Duration;

use async_nats::jetstream::{self, stream};
use idem::consume::nats;

use crate::consume::handler::RefundMsg;

pub(crate) fn nats_url() -> String {
    std::env::var("IDEM_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

pub(crate) async fn client() -> async_nats::Client {
    async_nats::connect(nats_url())
        .await
        .unwrap_or_else(|e| panic!("NATS at {} is required: {e}", nats_url()))
}

/// A fresh stream, deleted on drop.
pub(crate) struct TestStream {
    pub(crate) name: String,
    pub(crate) subject: String,
}

impl TestStream {
    pub(crate) async fn new(js: &jetstream::Context) -> TestStream {
        let sfx = uuid::Uuid::new_v4().simple().to_string();
        let t = TestStream {
            name: format!("IDEM_T_{sfx}"),
            subject: format!("idem.t.{sfx}"),
        };
        js.create_stream(stream::Config {
            name: t.name.clone(),
            subjects: vec![t.subject.clone()],
            // The server drops a re-published `Nats-Msg-Id` inside this window
            // (100 ms at least); the test's same-id duplicates are published
            // after it, so they reach the consumer.
            duplicate_window: Duration::from_millis(100),
            ..Default::default()
        })
        .await
        .expect("create stream");
        t
    }
}

impl Drop for TestStream {
    fn drop(&mut self) {
        let name = self.name.clone();
        let _ = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async move {
                    let js = jetstream::new(client().await);
                    let _ = js.delete_stream(&name).await;
                })
        })
        .join();
    }
}

pub(crate) async fn publish(js: &jetstream::Context, subject: &str, id: &str, msg: &RefundMsg) {
    publish_bytes(js, subject, id, serde_json::to_vec(msg).unwrap()).await;
}

/// Publishes `body` with the message id `id` and waits for the stream's ack.
pub(crate) async fn publish_bytes(js: &jetstream::Context, subject: &str, id: &str, body: Vec<u8>) {
    let mut headers = async_nats::HeaderMap::new();
    headers.insert(nats::MSG_ID_HEADER, id);
    let ack = js
        .publish_with_headers(subject.to_owned(), headers, body.into())
        .await
        .expect("publish")
        .await
        .expect("publish ack");
    assert!(!ack.duplicate, "the server kept the publisher's duplicate");
}

/// Creates the durable pull consumer `name` on `stream`.
pub(crate) async fn pull_consumer(
    js: &jetstream::Context,
    stream: &str,
    name: &str,
    ack_wait: Duration,
    max_deliver: i64,
) {
    js.get_stream(stream)
        .await
        .expect("stream")
        .create_consumer(jetstream::consumer::pull::Config {
            durable_name: Some(name.into()),
            ack_wait,
            max_deliver,
            max_ack_pending: 1024,
            ..Default::default()
        })
        .await
        .expect("create consumer");
}

/// The consumer's messages not yet delivered and delivered but not acked.
pub(crate) async fn pending(js: &jetstream::Context, stream: &str, name: &str) -> (u64, usize) {
    let mut c: jetstream::consumer::PullConsumer = js
        .get_stream(stream)
        .await
        .expect("stream")
        .get_consumer(name)
        .await
        .expect("consumer");
    let info = c.info().await.expect("consumer info");
    (info.num_pending, info.num_ack_pending)
}

/// Publishes refunds of `orders` orders to `subject` (ids `m-<i>`), every
/// 8th one again under a new id, and again under its own id after the
/// server's duplicate window: the number of messages.
pub(crate) async fn publish_with_duplicates(
    js: &jetstream::Context,
    subject: &str,
    orders: usize,
) -> usize {
    let msg = |i: usize| RefundMsg {
        id: String::new(),
        order_no: format!("o-{i}"),
        slow_ms: 0,
    };
    let mut n = 0;
    for i in 0..orders {
        publish(js, subject, &format!("m-{i}"), &msg(i)).await;
        n += 1;
        if i % 8 == 1 {
            publish(js, subject, &format!("m-{i}-again"), &msg(i)).await;
            n += 1;
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    for i in (0..orders).filter(|i| i % 8 == 1) {
        publish(js, subject, &format!("m-{i}"), &msg(i)).await;
        n += 1;
    }
    n
}
