//! The batched consumer over the machine's RabbitMQ and NATS JetStream into
//! PostgreSQL: one poison record in a batch is parked alone (the others of
//! its batch commit and are acknowledged once), and a stream with
//! redelivered and re-sent messages applies each refund once.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use idem::consume::{ConsumerOptions, Counters, amqp, nats, shutdown};
use idem::db::Dialect;

use crate::consume::amqp_support::{
    TestQueue, amqp_url, channel, depth, publish_bytes, publish_with_duplicates, wait_depth,
};
use crate::consume::batch_support::{
    CONSUMER, Hooked, commit_log, pg_batch, poison_opts, thirty_and_a_poison, wait_until,
};
use crate::consume::handler::stop_when_idle;
use crate::consume::nats_support::{
    TestStream, client, pending, publish_bytes as nats_publish,
    publish_with_duplicates as nats_with_duplicates, pull_consumer,
};
use crate::consume::support::LogDb;

/// What both poison tests check once the loop stopped.
async fn parked_alone(
    db: &LogDb,
    idem: &idem::Idem,
    c: &Counters,
    hooked: &Hooked,
    commits: &[usize],
) {
    let hooked = hooked.lock().unwrap().clone();
    assert_eq!(hooked.len(), 1, "{hooked:?}");
    assert_eq!(hooked[0].0.as_deref(), Some("m-poison"));
    assert_eq!(hooked[0].1, 3, "poison on its third delivery");
    assert!(hooked[0].2.contains("refused"), "{hooked:?}");
    let got = |x| Counters::get(x);
    assert_eq!(
        (
            got(&c.poisoned),
            got(&c.retried),
            got(&c.acked),
            got(&c.delivered)
        ),
        (1, 2, 30, 33),
        "only the poison record went back, and each good one was acked once"
    );
    assert_eq!(db.refunds().await, 30);
    assert_eq!(db.log_rows().await, 30);
    let stats = idem.stats();
    assert_eq!(
        (
            stats.count("executed"),
            stats.count("released"),
            stats.count("failed")
        ),
        (30, 3, 0)
    );
    assert_eq!(commits.iter().sum::<usize>(), 30, "{commits:?}");
    assert!(commits.iter().any(|&n| n > 1), "batches: {commits:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amqp_poison_record_is_parked_alone() {
    let db = LogDb::new(Dialect::Postgres).await;
    let (conn, ch) = channel().await;
    let q = TestQueue::new(&ch, true).await;
    for (id, body) in thirty_and_a_poison() {
        publish_bytes(&ch, &q.name, &id, &body).await;
    }
    wait_depth(&ch, &q.name, 31).await;
    let idem = crate::support::handle(Arc::new(db.store.clone()), "batch-poison");
    let (after, commits) = commit_log();
    let batch = pg_batch(db.pg().clone(), &idem, 16, Some(after));
    let (opts, hooked) = poison_opts();
    let c = opts.counters.clone();
    let (stop, signal) = shutdown();
    let queue = q.name.clone();
    let run =
        tokio::spawn(
            async move { amqp::run_batch(&amqp_url(), &queue, opts, signal, batch).await },
        );
    wait_until("the poison record and 30 acks", || {
        Counters::get(&c.poisoned) == 1 && Counters::get(&c.acked) == 30
    })
    .await;
    stop.trigger();
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .unwrap()
        .unwrap();
    let commits = commits.lock().unwrap().clone();
    parked_alone(&db, &idem, &c, &hooked, &commits).await;
    assert_eq!(depth(&ch, &q.name).await, 0);
    let dead = q.dead().to_owned();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while depth(&ch, &dead).await != 1 {
        assert!(std::time::Instant::now() < deadline, "dead-lettered once");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = conn.close(200, "bye".into()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_poison_record_is_parked_alone() {
    let db = LogDb::new(Dialect::Postgres).await;
    let js = jetstream::new(client().await);
    let s = TestStream::new(&js).await;
    for (id, body) in thirty_and_a_poison() {
        nats_publish(&js, &s.subject, &id, body).await;
    }
    pull_consumer(&js, &s.name, "refunds", Duration::from_secs(10), 10).await;
    let idem = crate::support::handle(Arc::new(db.store.clone()), "batch-poison-nats");
    let (after, commits) = commit_log();
    let batch = pg_batch(db.pg().clone(), &idem, 16, Some(after));
    let (opts, hooked) = poison_opts();
    let c = opts.counters.clone();
    let (stop, signal) = shutdown();
    let (cl, name) = (client().await, s.name.clone());
    let run =
        tokio::spawn(
            async move { nats::run_batch(cl, &name, "refunds", opts, signal, batch).await },
        );
    wait_until("the poison record and 30 acks", || {
        Counters::get(&c.poisoned) == 1 && Counters::get(&c.acked) == 30
    })
    .await;
    stop.trigger();
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .unwrap()
        .unwrap();
    let commits = commits.lock().unwrap().clone();
    parked_alone(&db, &idem, &c, &hooked, &commits).await;
    assert_eq!(pending(&js, &s.name, "refunds").await, (0, 0), "terminated");
}

/// What both dedupe tests check: one refund per order, all acked.
async fn once_per_order(db: &LogDb, idem: &idem::Idem, c: &Counters, orders: i64, messages: u64) {
    assert_eq!(db.refunds().await, orders, "one refund per order");
    assert_eq!(db.double_refunds().await, 0);
    assert_eq!(db.log_rows().await, orders);
    assert_eq!(Counters::get(&c.acked), messages);
    let stats = idem.stats();
    assert_eq!(stats.count("executed") as i64, orders);
    assert_eq!(stats.count("duplicate_message"), messages - orders as u64);
}

fn dedupe_opts() -> ConsumerOptions {
    let mut opts = ConsumerOptions::new(CONSUMER);
    opts.concurrency = 2;
    opts
}

/// 1,000 messages about 800 orders (the same id again, the same order
/// under a new id) through batches of 100.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amqp_batches_refund_each_order_once() {
    let db = LogDb::new(Dialect::Postgres).await;
    let (conn, ch) = channel().await;
    let q = TestQueue::new(&ch, false).await;
    let orders = publish_with_duplicates(&ch, &q.name, 1000).await;
    let idem = crate::support::handle(Arc::new(db.store.clone()), "batch-amqp");
    let batch = pg_batch(db.pg().clone(), &idem, 100, None);
    let opts = dedupe_opts();
    let c = opts.counters.clone();
    let (stop, signal) = shutdown();
    stop_when_idle(c.clone(), stop, Duration::from_millis(1000));
    tokio::time::timeout(
        Duration::from_secs(60),
        amqp::run_batch(&amqp_url(), &q.name, opts, signal, batch),
    )
    .await
    .expect("the loop stops when idle");
    once_per_order(&db, &idem, &c, orders as i64, 1000).await;
    assert_eq!(depth(&ch, &q.name).await, 0);
    let _ = conn.close(200, "bye".into()).await;
}

/// The same on JetStream: 800 orders, 100 re-sent under a new id, 100
/// re-published under their id after the server's duplicate window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_batches_refund_each_order_once() {
    let db = LogDb::new(Dialect::Postgres).await;
    let js = jetstream::new(client().await);
    let s = TestStream::new(&js).await;
    let messages = nats_with_duplicates(&js, &s.subject, 800).await;
    assert_eq!(messages, 1000);
    pull_consumer(&js, &s.name, "refunds", Duration::from_secs(10), 10).await;
    let idem = crate::support::handle(Arc::new(db.store.clone()), "batch-nats");
    let batch = pg_batch(db.pg().clone(), &idem, 100, None);
    let opts = dedupe_opts();
    let c = opts.counters.clone();
    let (stop, signal) = shutdown();
    stop_when_idle(c.clone(), stop, Duration::from_millis(1000));
    tokio::time::timeout(
        Duration::from_secs(60),
        nats::run_batch(client().await, &s.name, "refunds", opts, signal, batch),
    )
    .await
    .expect("the loop stops when idle");
    once_per_order(&db, &idem, &c, 800, 1000).await;
    assert_eq!(pending(&js, &s.name, "refunds").await, (0, 0));
}
