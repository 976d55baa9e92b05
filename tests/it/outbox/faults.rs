//! The relay under broker faults: a broker that goes away mid-run (a
//! `nats-server` of the test's own killed and restarted; RabbitMQ's
//! connection cut by a proxy and healed), with no message lost and the relay
//! recovering by itself; and a poison payload parked after N attempts, its
//! hook fired once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use idem::consume::Counters;
use idem::db::Dialect;
use idem::outbox::{Outbox, RelayCounters as R};

use crate::outbox::brokers::{NatsServer, Target, TestStream};
use crate::outbox::support::{
    applied_ids, consumer_db, consumer_handle, enqueue_many, pending, producer_db, relay_opts,
    relay_until_drained, report,
};
use crate::support::proxy::Proxy;
use crate::support::unique_ns;

/// Waits until `relay` published at least `n` messages.
async fn published_at_least(c: &R, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while R::get(&c.published) < n {
        assert!(
            Instant::now() < deadline,
            "the relay published {} of {n}",
            R::get(&c.published)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Relays 2,000 business transactions (1,800 committed) while `outage`
/// takes the broker away once the relay published 300 and brings it back;
/// then consumes. Returns nothing: asserts no loss, each applied once, and
/// that the relay saw the outage and recovered by itself.
async fn survives_outage<F, Fut>(target: Target, outage: F)
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let started = Instant::now();
    let producer = Arc::new(producer_db(Dialect::Postgres).await);
    let consumer = Arc::new(consumer_db().await);
    let mut opts = relay_opts("outage");
    opts.batch = 50;
    opts.publish_timeout = Duration::from_secs(3);
    opts.lease = Duration::from_secs(10);
    let relay = Arc::new(target.relay(producer.store.clone(), opts).await);
    let done = Arc::new(AtomicBool::new(false));
    let producers = tokio::spawn({
        let (producer, done, topic) = (producer.clone(), done.clone(), target.topic());
        async move {
            let ids = enqueue_many(&producer, &topic, 2000).await;
            done.store(true, Ordering::SeqCst);
            ids
        }
    });
    let drain = tokio::spawn({
        let (relay, producer, done) = (relay.clone(), producer.clone(), done.clone());
        async move {
            relay_until_drained(
                relay,
                &producer,
                || done.load(Ordering::SeqCst),
                Duration::from_secs(240),
            )
            .await
        }
    });
    published_at_least(relay.counters(), 300).await;
    outage().await;
    drain.await.unwrap();
    let committed = producers.await.unwrap();
    let c = relay.counters();
    assert!(
        R::get(&c.broker_down) >= 1,
        "the relay saw the broker go away"
    );
    assert_eq!(pending(&producer).await, 0, "the relay recovered by itself");
    assert_eq!(
        (R::get(&c.refused), R::get(&c.parked)),
        (0, 0),
        "an outage is no message's fault: nothing refused, nothing parked"
    );
    let idem = consumer_handle(&consumer, &unique_ns("obx-outage"));
    let counters = target
        .consume(
            consumer.clone(),
            idem,
            committed.len() as i64,
            Duration::from_secs(240),
        )
        .await;
    let (ids, most) = applied_ids(&consumer).await;
    let want: Vec<String> = committed.iter().map(|i| i.to_string()).collect();
    assert_eq!(ids, want, "no committed message was lost");
    assert_eq!(most, 1, "each applied once");
    report(
        "outage",
        Dialect::Postgres,
        target.broker(),
        2000,
        committed.len(),
        c,
        Counters::get(&counters.delivered),
        ids.len() as i64,
        started.elapsed(),
    );
}

/// NATS: the test's own `nats-server` is killed (SIGKILL) mid-run and
/// restarted 4 s later (longer than the relay's publish timeout: the client
/// buffers publishes over a shorter gap) on the same port and store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_server_restart_mid_run_loses_nothing() {
    let server = Arc::new(std::sync::Mutex::new(NatsServer::start()));
    let url = server.lock().unwrap().url();
    let target = Target::Nats(TestStream::new(&url, None).await);
    survives_outage(target, || async {
        let s = server.clone();
        tokio::task::spawn_blocking(move || {
            s.lock().unwrap().kill();
            std::thread::sleep(Duration::from_secs(4));
            s.lock().unwrap().restart();
        })
        .await
        .unwrap();
    })
    .await;
}

/// RabbitMQ (shared, never restarted): the relay's connection runs through a
/// proxy that cuts every connection and refuses new ones for 1.5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_connection_cut_mid_run_loses_nothing() {
    let proxy = Arc::new(Proxy::start(5672).await);
    let url = format!("amqp://guest:guest@127.0.0.1:{}/%2f", proxy.port());
    let target = Target::rabbit(url).await;
    survives_outage(target, || async {
        proxy.cut();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        proxy.heal();
    })
    .await;
}

/// A payload over the stream's size limit is refused on every attempt:
/// parked after 3, the hook fired once, the good messages beside it
/// published, nothing left pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poison_payload_is_parked_after_n_attempts_with_one_hook_call() {
    let producer = Arc::new(producer_db(Dialect::Postgres).await);
    let url = crate::outbox::brokers::nats_url();
    let stream = TestStream::new(&url, Some(1024)).await;
    let target = Target::Nats(stream);
    let pool = match &producer.pool {
        crate::consume::support::Pool::Pg(p) => p.clone(),
        _ => unreachable!(),
    };
    let mut tx = pool.begin().await.unwrap();
    for i in 0..20 {
        let payload = format!("{{\"topic\":\"orders\",\"business_id\":\"o-{i}\",\"step\":0}}");
        Outbox::enqueue(&mut tx, "orders", &format!("o-{i}"), payload.as_bytes())
            .await
            .unwrap();
    }
    let poison = Outbox::enqueue(&mut tx, "orders", "o-poison", &vec![b'x'; 4096])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let hook_calls = Arc::new(AtomicU64::new(0));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut opts = relay_opts("poison");
    opts.max_attempts = 3;
    opts.on_park = Some({
        let (calls, seen) = (hook_calls.clone(), seen.clone());
        Arc::new(move |p: &idem::outbox::Parked| {
            calls.fetch_add(1, Ordering::SeqCst);
            seen.lock()
                .unwrap()
                .push((p.id.clone(), p.attempts, p.error.clone()));
        })
    });
    let relay = Arc::new(target.relay(producer.store.clone(), opts).await);
    relay_until_drained(relay.clone(), &producer, || true, Duration::from_secs(60)).await;
    assert_eq!(hook_calls.load(Ordering::SeqCst), 1, "the hook fired once");
    let (id, attempts, error) = seen.lock().unwrap()[0].clone();
    assert_eq!((id, attempts), (poison, 3), "{error}");
    let c = relay.counters();
    assert_eq!(R::get(&c.parked), 1);
    assert_eq!(R::get(&c.retried), 2, "two retries before the park");
    assert_eq!(R::get(&c.published), 20, "the good messages were published");
    let parked = producer
        .scalar("SELECT COUNT(*) FROM idem_outbox WHERE state = 2")
        .await;
    assert_eq!(parked, 1);
    if let Target::Nats(s) = &target {
        assert_eq!(s.messages(&url).await, 20);
    }
    eprintln!(
        "IDEM_OUTBOX poison db=Postgres broker=nats enqueued=21 published=20 parked=1 hook_calls=1 last_error={error}"
    );
}
