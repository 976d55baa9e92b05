//! The RabbitMQ loop's policies on the machine's RabbitMQ and PostgreSQL:
//! poison messages, graceful shutdown under load, reconnection. Queues are
//! random and deleted afterwards.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem::consume::{ConsumerOptions, Counters, amqp, shutdown};
use idem::db::Dialect;
use lapin::BasicProperties;
use lapin::options::BasicPublishOptions;

use crate::consume::amqp_support::{TestQueue, amqp_url, channel, depth, publish};
use crate::consume::handler::{RefundMsg, handle_delivery, stop_when_idle};
use crate::consume::support::LogDb;

/// A message that fails on every delivery is poison after `max_deliveries`:
/// dead-lettered once, handed to the hook once, counted; the good messages
/// beside it are processed and nothing loops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poison_message_is_dead_lettered_after_n_failures() {
    let db = LogDb::new(Dialect::Postgres).await;
    let (conn, ch) = channel().await;
    let q = TestQueue::new(&ch, true).await;
    for i in 0..20 {
        let msg = RefundMsg {
            id: String::new(),
            order_no: format!("o-{i}"),
            slow_ms: 0,
        };
        publish(&ch, &q.name, &format!("m-{i}"), &msg).await;
    }
    // Not JSON: the handler fails on it every time.
    ch.basic_publish(
        "".into(),
        q.name.as_str().into(),
        BasicPublishOptions::default(),
        b"not json",
        BasicProperties::default().with_message_id("m-poison".into()),
    )
    .await
    .unwrap();
    let pool = db.pg().clone();
    let idem = Arc::new(crate::support::handle(Arc::new(db.store.clone()), "poison"));
    let hooked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut opts = ConsumerOptions::new("refund-service");
    opts.max_deliveries = 3;
    opts.retry_delay = Duration::from_millis(20);
    opts.on_poison = Some({
        let hooked = hooked.clone();
        Arc::new(move |p: &idem::consume::Poisoned| {
            hooked.lock().unwrap().push((
                p.delivery.id.clone(),
                p.delivery.attempt,
                p.error.clone(),
            ));
        })
    });
    let counters = opts.counters.clone();
    let (stop, signal) = shutdown();
    stop_when_idle(counters.clone(), stop, Duration::from_millis(1000));
    let handler = move |d| {
        let (pool, idem) = (pool.clone(), idem.clone());
        async move { handle_delivery(pool, idem, d, || {}).await }
    };
    tokio::time::timeout(
        Duration::from_secs(60),
        amqp::run(&amqp_url(), &q.name, opts, signal, handler),
    )
    .await
    .expect("the loop stops when idle");
    let hooked = hooked.lock().unwrap().clone();
    assert_eq!(hooked.len(), 1, "{hooked:?}");
    assert_eq!(hooked[0].0.as_deref(), Some("m-poison"));
    assert_eq!(hooked[0].1, 3, "poison on the third delivery");
    assert!(hooked[0].2.contains("bad payload"), "{hooked:?}");
    assert_eq!(Counters::get(&counters.poisoned), 1);
    assert_eq!(Counters::get(&counters.retried), 2);
    assert_eq!(Counters::get(&counters.acked), 20);
    assert_eq!(db.refunds().await, 20);
    assert_eq!(depth(&ch, &q.name).await, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while depth(&ch, q.dead()).await != 1 {
        assert!(
            Instant::now() < deadline,
            "the poison message reached the dead-letter queue"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = conn.close(200, "bye".into()).await;
}

/// Shutdown while 300 slow messages are being consumed: running handlers
/// finish and ack, the rest stays queued (or is requeued); a second consumer
/// processes it. Every order is refunded exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_under_load_loses_nothing() {
    let db = LogDb::with_pool(Dialect::Postgres, 10).await;
    let (conn, ch) = channel().await;
    let q = TestQueue::new(&ch, false).await;
    for i in 0..300 {
        let msg = RefundMsg {
            id: String::new(),
            order_no: format!("o-{i}"),
            slow_ms: 20,
        };
        publish(&ch, &q.name, &format!("m-{i}"), &msg).await;
    }
    let idem = Arc::new(crate::support::handle(
        Arc::new(db.store.clone()),
        "shutdown",
    ));
    let consumer = |opts: ConsumerOptions, signal| {
        let (pool, idem, queue) = (db.pg().clone(), idem.clone(), q.name.clone());
        let handler = move |d| {
            let (pool, idem) = (pool.clone(), idem.clone());
            async move { handle_delivery(pool, idem, d, || {}).await }
        };
        tokio::spawn(async move { amqp::run(&amqp_url(), &queue, opts, signal, handler).await })
    };
    let mut opts = ConsumerOptions::new("refund-service");
    opts.prefetch = 64;
    opts.concurrency = 8;
    let first = opts.counters.clone();
    let (stop, signal) = shutdown();
    let run = consumer(opts, signal);
    while Counters::get(&first.acked) < 50 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.trigger();
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("shutdown finishes")
        .unwrap();
    let (acked, delivered) = (Counters::get(&first.acked), Counters::get(&first.delivered));
    assert_eq!(acked, delivered, "every started handler finished and acked");
    assert!(acked < 300, "stopped mid-way ({acked} acked)");
    assert_eq!(
        db.refunds().await as u64,
        acked,
        "no handler left half done"
    );
    let mut opts = ConsumerOptions::new("refund-service");
    opts.concurrency = 8;
    let second = opts.counters.clone();
    let (stop, signal) = shutdown();
    stop_when_idle(second.clone(), stop, Duration::from_millis(1000));
    tokio::time::timeout(Duration::from_secs(60), consumer(opts, signal))
        .await
        .expect("the second consumer drains the queue")
        .unwrap();
    assert_eq!(db.refunds().await, 300, "nothing lost");
    assert_eq!(db.double_refunds().await, 0);
    assert_eq!(depth(&ch, &q.name).await, 0);
    eprintln!(
        "IDEM_REPORT rabbitmq shutdown: messages=300 first_acked={acked} second_delivered={} second_redelivered={}",
        Counters::get(&second.delivered),
        Counters::get(&second.redelivered)
    );
    let _ = conn.close(200, "bye".into()).await;
}

/// The broker cancels the consumer (its queue is deleted) and the queue comes
/// back: the loop reconnects with backoff and consumes the new message; with
/// no broker at all it keeps retrying until shutdown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnects_with_backoff() {
    let db = LogDb::new(Dialect::Postgres).await;
    let (conn, ch) = channel().await;
    let q = TestQueue::new(&ch, false).await;
    let msg = |i: usize| RefundMsg {
        id: String::new(),
        order_no: format!("o-{i}"),
        slow_ms: 0,
    };
    publish(&ch, &q.name, "m-1", &msg(1)).await;
    let idem = Arc::new(crate::support::handle(
        Arc::new(db.store.clone()),
        "reconnect",
    ));
    let mut opts = ConsumerOptions::new("refund-service");
    opts.reconnect_min = Duration::from_millis(50);
    opts.reconnect_max = Duration::from_millis(400);
    let counters = opts.counters.clone();
    let (stop, signal) = shutdown();
    let handler = {
        let pool = db.pg().clone();
        move |d| {
            let (pool, idem) = (pool.clone(), idem.clone());
            async move { handle_delivery(pool, idem, d, || {}).await }
        }
    };
    let queue = q.name.clone();
    let run =
        tokio::spawn(async move { amqp::run(&amqp_url(), &queue, opts, signal, handler).await });
    let wait_for = |n: u64| {
        let counters = counters.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(20);
            while Counters::get(&counters.acked) < n {
                assert!(Instant::now() < deadline, "{n} acks expected");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    wait_for(1).await;
    ch.queue_delete(q.name.as_str().into(), Default::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    ch.queue_declare(
        q.name.as_str().into(),
        Default::default(),
        Default::default(),
    )
    .await
    .unwrap();
    publish(&ch, &q.name, "m-2", &msg(2)).await;
    wait_for(2).await;
    assert!(Counters::get(&counters.connects) >= 2, "{counters:?}");
    stop.trigger();
    tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(db.refunds().await, 2);

    // No broker: retried (never returned) until shutdown.
    let mut opts = ConsumerOptions::new("nobody");
    opts.reconnect_min = Duration::from_millis(20);
    let counters = opts.counters.clone();
    let (stop, signal) = shutdown();
    let run = tokio::spawn(async move {
        amqp::run(
            "amqp://guest:guest@127.0.0.1:1/%2f",
            "q",
            opts,
            signal,
            |_| async { Ok::<(), std::convert::Infallible>(()) },
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!run.is_finished(), "the loop keeps trying");
    stop.trigger();
    tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(Counters::get(&counters.connects), 0);
    let _ = conn.close(200, "bye".into()).await;
}
