//! The consume log behind the NATS JetStream loop, on the machine's NATS and
//! PostgreSQL: `ack_wait` (1 s) shorter than some bodies (1.5 s) and
//! concurrency 8, so JetStream redelivers messages whose first attempt still
//! runs; each order is refunded once. Streams are random and deleted.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer::pull};
use idem::consume::{ConsumerOptions, Counters, nats, shutdown};
use idem::db::Dialect;

use crate::consume::handler::{RefundMsg, handle_delivery, stop_when_idle};
use crate::consume::nats_support::{TestStream, client, publish};
use crate::consume::support::LogDb;

/// 1,000 messages about 800 orders (100 same-id and 100 same-order-new-id
/// duplicates, every 40th order slow), `ack_wait` 1 s, concurrency 8: slow
/// first attempts are redelivered while they run, and wait on the consume
/// log's key. One refund per order; nothing left pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redelivery_while_running_refunds_once() {
    let started = Instant::now();
    let db = LogDb::with_pool(Dialect::Postgres, 12).await;
    let js = jetstream::new(client().await);
    let s = TestStream::new(&js).await;
    let orders = 800;
    let mut same_id = Vec::new();
    for i in 0..orders {
        let slow_ms = if i % 40 == 0 { 1500 } else { 0 };
        let msg = RefundMsg {
            id: String::new(),
            order_no: format!("o-{i}"),
            slow_ms,
        };
        publish(&js, &s.subject, &format!("m-{i}"), &msg).await;
        if i % 8 == 1 {
            publish(&js, &s.subject, &format!("m-{i}-again"), &msg).await;
            same_id.push((format!("m-{i}"), msg));
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    for (id, msg) in &same_id {
        publish(&js, &s.subject, id, msg).await;
    }
    let stream = js.get_stream(&s.name).await.unwrap();
    stream
        .create_consumer(pull::Config {
            durable_name: Some("refunds".into()),
            ack_wait: Duration::from_secs(1),
            max_deliver: 20,
            max_ack_pending: 256,
            ..Default::default()
        })
        .await
        .expect("create consumer");
    let idem = Arc::new(crate::support::handle(Arc::new(db.store.clone()), "nats"));
    let running: Arc<Mutex<HashSet<String>>> = Arc::default();
    let overlaps = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let handler = {
        let (pool, idem) = (db.pg().clone(), idem.clone());
        let (running, overlaps) = (running.clone(), overlaps.clone());
        move |d: idem::consume::Delivery| {
            let (pool, idem) = (pool.clone(), idem.clone());
            let (running, overlaps) = (running.clone(), overlaps.clone());
            async move {
                let id = d.id.clone().unwrap_or_default();
                if !running.lock().unwrap().insert(id.clone()) {
                    overlaps.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                let r = handle_delivery(pool, idem, d, || {}).await;
                running.lock().unwrap().remove(&id);
                r
            }
        }
    };
    let mut opts = ConsumerOptions::new("refund-service");
    opts.prefetch = 64;
    opts.concurrency = 8;
    let counters = opts.counters.clone();
    let (stop, signal) = shutdown();
    // Idle longer than `ack_wait`: late redeliveries are consumed too.
    stop_when_idle(counters.clone(), stop, Duration::from_millis(2500));
    let c = client().await;
    tokio::time::timeout(
        Duration::from_secs(120),
        nats::run(c, &s.name, "refunds", opts, signal, handler),
    )
    .await
    .expect("the loop stops when idle");
    assert_eq!(db.refunds().await, orders as i64, "one refund per order");
    assert_eq!(db.double_refunds().await, 0);
    assert_eq!(db.log_rows().await, orders as i64);
    let redelivered = Counters::get(&counters.redelivered);
    let overlaps = overlaps.load(std::sync::atomic::Ordering::SeqCst);
    assert!(redelivered >= 1, "ack_wait forced redeliveries");
    assert!(
        overlaps >= 1,
        "a redelivery arrived while its first attempt ran"
    );
    let mut consumer: jetstream::consumer::PullConsumer =
        stream.get_consumer("refunds").await.unwrap();
    let info = consumer.info().await.unwrap();
    assert_eq!(
        (info.num_pending, info.num_ack_pending),
        (0, 0),
        "nothing left"
    );
    let stats = idem.stats();
    eprintln!(
        "IDEM_REPORT nats: messages=1000 orders={orders} delivered={} redelivered={redelivered} \
         overlapping={overlaps} processed={} duplicates={} acked={} effects={} elapsed={:?}",
        Counters::get(&counters.delivered),
        stats.count("executed"),
        stats.count("duplicate_message"),
        Counters::get(&counters.acked),
        db.refunds().await,
        started.elapsed()
    );
}
