//! The consume log behind the RabbitMQ loop, on the machine's RabbitMQ and
//! PostgreSQL: a consumer process aborted between a commit and its ack and
//! restarted, the poison policy, and graceful shutdown under load. Queues are
//! random and deleted afterwards.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem::consume::{ConsumerOptions, Counters, amqp, shutdown};
use idem::store::sql::Dialect;
use lapin::options::{BasicPublishOptions, QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};

use crate::consume_handler::{CrashAfter, RefundMsg, handle_delivery, stop_when_idle};
use crate::consume_support::LogDb;

fn amqp_url() -> String {
    std::env::var("IDEM_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// A channel on the machine's RabbitMQ (the test fails without one).
async fn channel() -> (Connection, Channel) {
    let conn = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .unwrap_or_else(|e| panic!("RabbitMQ at {} is required: {e}", amqp_url()));
    let ch = conn.create_channel().await.expect("channel");
    (conn, ch)
}

/// A fresh queue (optionally dead-lettering to `dlq`), deleted on drop.
struct TestQueue {
    name: String,
    extra: Vec<String>,
}

impl TestQueue {
    async fn new(ch: &Channel, dlq: bool) -> TestQueue {
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

    fn dead(&self) -> &str {
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
async fn depth(ch: &Channel, queue: &str) -> u32 {
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

async fn publish(ch: &Channel, queue: &str, id: &str, msg: &RefundMsg) {
    ch.basic_publish(
        "".into(),
        queue.into(),
        BasicPublishOptions::default(),
        &serde_json::to_vec(msg).unwrap(),
        BasicProperties::default().with_message_id(id.into()),
    )
    .await
    .expect("publish");
}

/// 1,000 messages about 800 orders: 100 re-sent with the same id, 100 about
/// an earlier order under a new id. Returns the distinct order count.
async fn publish_with_duplicates(ch: &Channel, queue: &str, total: usize) -> usize {
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
    let deadline = Instant::now() + Duration::from_secs(30);
    while depth(ch, queue).await < total as u32 {
        assert!(
            Instant::now() < deadline,
            "the broker did not take all messages"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    orders
}

/// What one consumer process reported.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct ChildStats {
    delivered: u64,
    acked: u64,
    redelivered: u64,
    executed: u64,
    duplicates: u64,
}

const CHILD_ENV: &str = "IDEM_CONSUME_CHILD";

/// Runs `child_consumer` in a child process of this test binary, returning
/// whether it exited normally and what it reported.
fn run_child(schema: &str, queue: &str, abort_after: Option<u64>) -> (bool, ChildStats) {
    let exe = std::env::current_exe().expect("test binary");
    let cfg = format!("{schema},{queue},{}", abort_after.unwrap_or(0));
    let mut child = std::process::Command::new(exe)
        .args([
            "consume_amqp::child_consumer",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, cfg)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("spawn consumer process");
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the consumer process did not finish in 180 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    use std::io::Read as _;
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let stats = out
        .lines()
        // libtest may print `test name ... ` on the same line first.
        .find_map(|l| l.split_once("IDEM_CHILD_STATS ").map(|(_, j)| j))
        .map(|j| serde_json::from_str(j).unwrap())
        .unwrap_or_default();
    (status.success(), stats)
}

/// The consumer process: consumes until idle, reports, exits; with an abort
/// count it aborts right after that commit, before the loop acknowledges it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the consumer process of `consumer_crash_between_commit_and_ack`"]
async fn child_consumer() {
    let Ok(cfg) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut parts = cfg.split(',');
    let (schema, queue) = (parts.next().unwrap(), parts.next().unwrap().to_owned());
    let abort_after = parts.next().unwrap().parse::<u64>().unwrap();
    let crash = Arc::new(CrashAfter::new((abort_after > 0).then_some(abort_after)));
    let pool = LogDb::attach_pg(schema, 12).await;
    let store = idem::store::sql::SqlStore::postgres(pool.clone());
    // The same namespace in every run: the log's keys must match across restarts.
    let idem = Arc::new(
        idem::Idem::builder()
            .store(store)
            .namespace("consume-it")
            .build()
            .unwrap(),
    );
    let mut opts = ConsumerOptions::new("refund-service");
    opts.prefetch = 64;
    opts.concurrency = 8;
    let counters = opts.counters.clone();
    let (stop, signal) = shutdown();
    stop_when_idle(counters.clone(), stop, Duration::from_millis(1500));
    let handler = {
        let (pool, idem) = (pool.clone(), idem.clone());
        move |d| {
            let (pool, idem, crash) = (pool.clone(), idem.clone(), crash.clone());
            async move { handle_delivery(pool, idem, d, || crash.committed()).await }
        }
    };
    amqp::run(&amqp_url(), &queue, opts, signal, handler).await;
    let stats = idem.stats();
    let report = ChildStats {
        delivered: Counters::get(&counters.delivered),
        acked: Counters::get(&counters.acked),
        redelivered: Counters::get(&counters.redelivered),
        executed: stats.count("executed"),
        duplicates: stats.count("duplicate_message"),
    };
    println!(
        "IDEM_CHILD_STATS {}",
        serde_json::to_string(&report).unwrap()
    );
}

/// 1,000 messages, 20% duplicated by the publisher; the consumer process
/// aborts after its 300th commit and before that ack, and is restarted:
/// exactly one refund per order and an empty queue afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_crash_between_commit_and_ack() {
    let started = Instant::now();
    let db = LogDb::new(Dialect::Postgres).await;
    let (conn, ch) = channel().await;
    let q = TestQueue::new(&ch, false).await;
    let orders = publish_with_duplicates(&ch, &q.name, 1000).await;
    assert_eq!(orders, 800);
    let schema = db.schema().to_owned();
    let queue = q.name.clone();
    let first = tokio::task::spawn_blocking({
        let (schema, queue) = (schema.clone(), queue.clone());
        move || run_child(&schema, &queue, Some(300))
    })
    .await
    .unwrap();
    assert!(!first.0, "the first consumer process aborted");
    let refunds_at_crash = db.refunds().await;
    // 300 commits, duplicates included (a duplicate commits an empty transaction).
    assert!(
        (1..=300).contains(&refunds_at_crash),
        "{refunds_at_crash} refunds committed before the abort"
    );
    let (ok, second) = tokio::task::spawn_blocking(move || run_child(&schema, &queue, None))
        .await
        .unwrap();
    assert!(ok, "the restarted consumer finished");
    assert_eq!(db.refunds().await, orders as i64, "one refund per order");
    assert_eq!(db.double_refunds().await, 0);
    assert_eq!(db.log_rows().await, orders as i64);
    assert_eq!(depth(&ch, &q.name).await, 0, "the queue is empty");
    assert!(
        second.redelivered >= 1,
        "the unacknowledged messages came back: {second:?}"
    );
    assert!(
        second.duplicates >= 1,
        "the committed-but-unacked message is a duplicate: {second:?}"
    );
    assert_eq!(
        second.executed as i64 + refunds_at_crash,
        orders as i64,
        "{second:?}"
    );
    eprintln!(
        "IDEM_REPORT rabbitmq crash: messages=1000 orders={orders} committed_before_abort={refunds_at_crash} \
         restart: delivered={} redelivered={} processed={} duplicates={} acked={} effects={} elapsed={:?}",
        second.delivered,
        second.redelivered,
        second.executed,
        second.duplicates,
        second.acked,
        db.refunds().await,
        started.elapsed()
    );
    let _ = conn.close(200, "bye".into()).await;
}

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
