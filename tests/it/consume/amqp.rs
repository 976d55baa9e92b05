//! The consume log behind the RabbitMQ loop, on the machine's RabbitMQ and
//! PostgreSQL: a consumer process aborted between a commit and its ack and
//! restarted. Queues are random and deleted afterwards.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem::consume::{ConsumerOptions, Counters, amqp, shutdown};
use idem::db::Dialect;

use crate::consume::amqp_support::{TestQueue, amqp_url, channel, depth, publish_with_duplicates};
use crate::consume::handler::{CrashAfter, handle_delivery, stop_when_idle};
use crate::consume::support::LogDb;

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

/// Runs this file's crash test again in a child process of this test binary,
/// with [`CHILD_ENV`] set so that it runs [`child_consumer`] instead; returns
/// whether it exited normally and what it reported.
fn run_child(schema: &str, queue: &str, abort_after: Option<u64>) -> (bool, ChildStats) {
    let exe = std::env::current_exe().expect("test binary");
    let cfg = format!("{schema},{queue},{}", abort_after.unwrap_or(0));
    let mut child = std::process::Command::new(exe)
        .args([
            "consume::amqp::consumer_crash_between_commit_and_ack",
            "--exact",
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
/// `cfg` is `schema,queue,abort_after` (0: no abort).
async fn child_consumer(cfg: &str) {
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
    // In the child process this test is the consumer (see `run_child`).
    if let Ok(cfg) = std::env::var(CHILD_ENV) {
        return child_consumer(&cfg).await;
    }
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
