//! `idem outbox` beside a real relay on PostgreSQL: during a broker outage
//! (a relay publishing to a port where nothing listens) the messages stay
//! pending and keep their attempts; a RabbitMQ that refuses them (no queue
//! for their topic: returned as unroutable) gets them parked; `retry`
//! unparks one, and the next relay round takes it at once.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem::outbox::{Relay, RelayCounters as R, RelayOptions};
use support::pipeline::{Fresh, cleaned_up, fresh_postgres};
use support::{id, idem};

const AMQP: &str = "amqp://127.0.0.1:5672/%2f";

/// A relay of `f`'s outbox to `broker` (2 attempts before parking), running
/// until the returned switch is triggered.
fn relay(
    f: &Fresh,
    broker: &str,
) -> (
    Arc<Relay>,
    idem::consume::Shutdown,
    tokio::task::JoinHandle<()>,
) {
    let mut opts = RelayOptions::new("cli-test");
    opts.max_attempts = 2;
    opts.lease = Duration::from_secs(5);
    opts.idle_poll = Duration::from_millis(50);
    opts.retry_min = Duration::from_millis(50);
    opts.retry_max = Duration::from_millis(200);
    opts.publish_timeout = Duration::from_secs(3);
    let publisher = idem::outbox::amqp::AmqpPublisher::new(broker);
    let relay = Arc::new(Relay::new(f.store.clone(), publisher, opts));
    let (stop, signal) = idem::consume::shutdown();
    let task = tokio::spawn({
        let relay = relay.clone();
        async move { relay.run(signal).await }
    });
    (relay, stop, task)
}

async fn stop(s: idem::consume::Shutdown, task: tokio::task::JoinHandle<()>) {
    s.trigger();
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the relay stops")
        .unwrap();
}

/// Polls `idem outbox --json` until `topic` has `parked` parked messages.
fn until_parked(args: &[&str], topic: &str, parked: u64) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = idem(&[&["outbox", "--json"], args].concat()).json();
        let t = v["topics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["topic"] == topic)
            .cloned();
        if t.as_ref().and_then(|t| t["parked"].as_u64()) == Some(parked) {
            return t.unwrap_or_default();
        }
        assert!(Instant::now() < deadline, "{parked} parked on {topic}: {v}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parked_by_a_relay_and_retried() {
    cleaned_up(fresh_postgres().await, async |f| {
        // (On PostgreSQL the fixture's name is its schema.)
        let args = ["--store", f.url.as_str(), "--schema", f.name.as_str()];
        // No queue is named after this topic: RabbitMQ returns its messages.
        let topic = format!("cli{}.nowhere", id());
        let first = f.db.enqueue("idem_outbox", &topic, "o-1").await;
        f.db.enqueue("idem_outbox", &topic, "o-2").await;

        // The broker is down: batches are given back, attempts unused.
        let (down, s, task) = relay(f, "amqp://127.0.0.1:1/%2f");
        let deadline = Instant::now() + Duration::from_secs(30);
        while R::get(&down.counters().broker_down) == 0 {
            assert!(Instant::now() < deadline, "the relay never met the outage");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        stop(s, task).await;
        let v = idem(&[&["outbox", "--json"], &args[..]].concat()).json();
        let t = &v["topics"][0];
        assert_eq!(
            (t["pending"].as_u64(), t["parked"].as_u64()),
            (Some(2), Some(0)),
            "{v}"
        );
        let attempts =
            f.db.text("SELECT MAX(attempts)::TEXT FROM idem_outbox")
                .await;
        assert_eq!(attempts, "0", "an outage costs no attempt");

        // The broker refuses them: parked after 2 attempts each.
        let (_, s, task) = relay(f, AMQP);
        until_parked(&args, &topic, 2);
        stop(s, task).await;
        let listed = idem(&[&["outbox", "--parked", "--json"], &args[..]].concat()).json();
        let list = listed["parked"].as_array().unwrap();
        assert_eq!(list.len(), 2, "{listed}");
        assert_eq!(
            (list[0]["id"].as_str(), list[0]["attempts"].as_u64()),
            (Some(first.as_str()), Some(2))
        );
        let error = list[0]["last_error"].as_str().unwrap_or_default();
        assert!(
            !error.is_empty(),
            "the relay's last error is shown: {listed}"
        );
        let human = idem(&[&["outbox", "--parked"], &args[..]].concat());
        assert!(
            human.out.contains(error) && human.out.contains("o-2"),
            "{}",
            human.out
        );

        // Retry one: pending again, and the next relay round takes it at once.
        let retried = idem(&[&["outbox", "retry", &first], &args[..]].concat());
        assert_eq!(retried.code, 0, "{}{}", retried.out, retried.err);
        let t = until_parked(&args, &topic, 1);
        assert_eq!(t["pending"], 1, "{t}");
        let (again, s, task) = relay(f, AMQP);
        until_parked(&args, &topic, 2);
        stop(s, task).await;
        assert!(R::get(&again.counters().claimed) >= 1);
        let attempts =
            f.db.text(&format!(
                "SELECT attempts::TEXT FROM idem_outbox WHERE id = '{first}'"
            ))
            .await;
        assert_eq!(attempts, "2", "counted again from 0");
    })
    .await;
}
