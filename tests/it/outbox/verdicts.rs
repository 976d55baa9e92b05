//! Per-message verdicts: a message the broker refuses costs that message an
//! attempt and nothing else. On NATS JetStream a subject no stream captures
//! (a typo such as `refundd`, a topic that ships before its stream) is such a
//! refusal, not an outage: the messages behind it are published and marked,
//! and it is parked after `max_attempts` with `on_park` called once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, stream};
use idem::db::Dialect;
use idem::outbox::{Outbox, RelayCounters as R};

use crate::outbox::brokers::{nats_client, nats_url};
use crate::outbox::support::{pending, producer_db, relay_opts};

/// A stream capturing `<prefix>orders` only; deleted on drop.
struct OrdersOnly {
    js: jetstream::Context,
    name: String,
    prefix: String,
}

impl OrdersOnly {
    async fn new() -> OrdersOnly {
        let js = jetstream::new(nats_client(&nats_url()).await);
        let sfx = uuid::Uuid::new_v4().simple().to_string();
        let (name, prefix) = (format!("IDEM_OBV_{sfx}"), format!("idem.obv.{sfx}."));
        js.create_stream(stream::Config {
            name: name.clone(),
            subjects: vec![format!("{prefix}orders")],
            ..Default::default()
        })
        .await
        .expect("create stream");
        OrdersOnly { js, name, prefix }
    }

    async fn messages(&self) -> u64 {
        let mut s = self.js.get_stream(&self.name).await.unwrap();
        s.info().await.unwrap().state.messages
    }
}

impl Drop for OrdersOnly {
    fn drop(&mut self) {
        let (js, name) = (self.js.clone(), self.name.clone());
        let _ = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async move { js.delete_stream(&name).await })
        })
        .join();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncaptured_subject_is_parked_alone_and_the_messages_behind_it_are_sent() {
    let producer = producer_db(Dialect::Postgres).await;
    let stream = OrdersOnly::new().await;
    // The oldest message is on a subject no stream captures; 3 good ones
    // follow it in the same batch.
    let mut tx = producer.pg().begin().await.unwrap();
    Outbox::enqueue(&mut tx, "refundd", "o-0", b"typo")
        .await
        .unwrap();
    for i in 1..=3 {
        Outbox::enqueue(&mut tx, "orders", &format!("o-{i}"), b"good")
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();

    let parks = Arc::new(AtomicU64::new(0));
    let mut opts = relay_opts("verdicts");
    opts.max_attempts = 3;
    opts.on_park = Some({
        let parks = parks.clone();
        Arc::new(move |p: &idem::outbox::Parked| {
            assert_eq!(p.topic, "refundd");
            assert!(p.error.contains("no JetStream stream"), "{}", p.error);
            parks.fetch_add(1, Ordering::SeqCst);
        })
    });
    let publisher = idem::outbox::nats::NatsPublisher::new(nats_client(&nats_url()).await)
        .subject_prefix(stream.prefix.clone());
    let relay = Arc::new(idem::outbox::Relay::new(
        producer.store.clone(),
        publisher,
        opts,
    ));
    let (stop, signal) = idem::consume::shutdown();
    let task = tokio::spawn({
        let relay = relay.clone();
        async move { relay.run(signal).await }
    });
    // The good messages go out with the first batch, long before the bad one
    // has used up its attempts.
    let deadline = Instant::now() + Duration::from_secs(30);
    while stream.messages().await < 3 || pending(&producer).await > 0 {
        assert!(
            Instant::now() < deadline,
            "after 30 s: {} in the stream, {} pending, broker_down={}",
            stream.messages().await,
            pending(&producer).await,
            R::get(&relay.counters().broker_down)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.trigger();
    task.await.unwrap();
    let c = relay.counters();
    assert_eq!(stream.messages().await, 3, "the good messages, once each");
    assert_eq!(
        producer
            .scalar("SELECT COUNT(*) FROM idem_outbox WHERE state = 1")
            .await,
        3
    );
    assert_eq!(
        producer
            .scalar("SELECT COUNT(*) FROM idem_outbox WHERE state = 2 AND topic = 'refundd' AND attempts = 3")
            .await,
        1,
        "the typo is parked after max_attempts"
    );
    assert_eq!(parks.load(Ordering::SeqCst), 1, "on_park fired once");
    assert_eq!(R::get(&c.refused), 3, "one refusal per attempt");
    assert_eq!(R::get(&c.published), 3, "the good messages published once");
    assert_eq!(R::get(&c.broker_down), 0, "a refusal is not an outage");
}
