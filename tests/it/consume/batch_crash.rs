//! The batched consumer process SIGKILLed between a commit and its acks, ten
//! times per broker. Each consumer process is this test binary run again
//! (the child mode is chosen by an environment variable); its `after_commit`
//! hook, on the first commit that applied anything, reports how many
//! messages it applied and blocks until the parent kills it. The killed
//! batches come back (RabbitMQ at once, JetStream after `ack_wait`) and are
//! found in the log: after a consumer that finishes, every order is
//! refunded once, nothing is lost and nothing is left.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use idem::consume::{ConsumerOptions, Counters, amqp, nats, shutdown};
use idem::db::Dialect;

use crate::consume::amqp_support::{
    TestQueue, amqp_url, channel, depth, publish_with_duplicates as amqp_with_duplicates,
};
use crate::consume::batch_support::{AfterCommit, CONSUMER, pg_batch, wait_until};
use crate::consume::handler::stop_when_idle;
use crate::consume::nats_support::{
    TestStream, client, pending, publish_with_duplicates as nats_with_duplicates, pull_consumer,
};
use crate::consume::support::LogDb;
use crate::support::sql::stress;
use crate::support::unique_ns;

const CHILD_ENV: &str = "IDEM_BATCH_CRASH_CHILD";
const MARK: &str = "IDEM_BATCH_COMMITTED";
const KILLS: usize = 10;

/// Orders and batch size: CI's, or `IDEM_STRESS=1`'s.
fn sizes() -> (usize, usize) {
    if stress() { (4000, 100) } else { (320, 10) }
}

/// The consumer process (`cfg`: broker, schema, queue or stream, namespace):
/// batches through the log; the first commit that applied anything is
/// reported on stdout, and its acks never come.
async fn child(cfg: &str) {
    let parts: Vec<&str> = cfg.split(',').collect();
    let [broker, schema, target, ns] = parts[..] else {
        panic!("bad child config {cfg}")
    };
    let pool = LogDb::attach_pg(schema, 4).await;
    let store = idem::store::sql::SqlStore::postgres(pool.clone());
    let idem = idem::Idem::builder()
        .store(store)
        .namespace(ns)
        .build()
        .unwrap();
    let hook: AfterCommit = Arc::new(|applied| {
        if applied == 0 {
            return;
        }
        use std::io::Write as _;
        let mut out = std::io::stdout();
        let _ = writeln!(out, "{MARK} {applied}");
        let _ = out.flush();
        loop {
            std::thread::sleep(Duration::from_secs(60));
        }
    });
    let batch = pg_batch(pool, &idem, sizes().1, Some(hook));
    let mut opts = ConsumerOptions::new(CONSUMER);
    // One batch at a time: every effect committed in this process is the
    // reported batch's.
    opts.concurrency = 1;
    let (_stop, signal) = shutdown();
    match broker {
        "amqp" => amqp::run_batch(&amqp_url(), target, opts, signal, batch).await,
        _ => nats::run_batch(client().await, target, "refunds", opts, signal, batch).await,
    }
}

/// Runs one consumer process of `test` until it reports a commit, then
/// SIGKILLs it; the number of messages that commit applied.
fn run_and_kill(test: &str, cfg: &str) -> usize {
    crate::support::child::run_until_mark_then_kill(
        test,
        (CHILD_ENV, cfg),
        MARK,
        "committed a batch",
    )
}

/// Ten consumer processes killed after a commit: returns the messages their
/// commits applied, checked against the refunds in the database.
async fn kill_ten_times(db: &LogDb, test: &'static str, cfg: String) -> i64 {
    let mut applied = 0;
    for _ in 0..KILLS {
        let cfg = cfg.clone();
        let n = tokio::task::spawn_blocking(move || run_and_kill(test, &cfg))
            .await
            .unwrap();
        assert!(n >= 1);
        applied += n as i64;
    }
    assert_eq!(
        db.refunds().await,
        applied,
        "every refund so far is one of the killed commits, none acknowledged"
    );
    applied
}

/// What both tests check after the final consumer.
async fn once_each(db: &LogDb, idem: &idem::Idem, orders: usize, killed: i64, c: &Counters) {
    assert_eq!(db.refunds().await, orders as i64, "0 lost");
    assert_eq!(db.double_refunds().await, 0, "0 duplicate effects");
    assert_eq!(db.log_rows().await, orders as i64);
    let stats = idem.stats();
    assert_eq!(stats.count("executed") as i64 + killed, orders as i64);
    assert!(
        Counters::get(&c.redelivered) >= 1,
        "the killed batches came back"
    );
    eprintln!(
        "IDEM_REPORT batch crash: orders={orders} kills={KILLS} applied_before_acks={killed} \
         final: delivered={} redelivered={} processed={} duplicates={}",
        Counters::get(&c.delivered),
        Counters::get(&c.redelivered),
        stats.count("executed"),
        stats.count("duplicate_message"),
    );
}

fn final_handle(db: &LogDb, ns: &str) -> idem::Idem {
    idem::Idem::builder()
        .store(db.store.clone())
        .namespace(ns)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amqp_killed_between_commit_and_ack_ten_times() {
    const TEST: &str = "consume::batch_crash::amqp_killed_between_commit_and_ack_ten_times";
    if let Ok(cfg) = std::env::var(CHILD_ENV) {
        return child(&cfg).await;
    }
    let started = Instant::now();
    let db = LogDb::new(Dialect::Postgres).await;
    let (conn, ch) = channel().await;
    let q = TestQueue::new(&ch, false).await;
    let (orders, size) = sizes();
    let messages = orders * 5 / 4;
    assert_eq!(amqp_with_duplicates(&ch, &q.name, messages).await, orders);
    let ns = unique_ns("batch-crash");
    let cfg = format!("amqp,{},{},{ns}", db.schema(), q.name);
    let killed = kill_ten_times(&db, TEST, cfg).await;
    let idem = final_handle(&db, &ns);
    let mut opts = ConsumerOptions::new(CONSUMER);
    opts.concurrency = 2;
    let c = opts.counters.clone();
    let (stop, signal) = shutdown();
    stop_when_idle(c.clone(), stop, Duration::from_millis(1500));
    let batch = pg_batch(db.pg().clone(), &idem, size, None);
    tokio::time::timeout(
        Duration::from_secs(120),
        amqp::run_batch(&amqp_url(), &q.name, opts, signal, batch),
    )
    .await
    .expect("the final consumer drains the queue");
    once_each(&db, &idem, orders, killed, &c).await;
    assert_eq!(depth(&ch, &q.name).await, 0, "nothing left");
    eprintln!(
        "IDEM_REPORT batch crash amqp: elapsed={:?}",
        started.elapsed()
    );
    let _ = conn.close(200, "bye".into()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_killed_between_commit_and_ack_ten_times() {
    const TEST: &str = "consume::batch_crash::nats_killed_between_commit_and_ack_ten_times";
    if let Ok(cfg) = std::env::var(CHILD_ENV) {
        return child(&cfg).await;
    }
    let started = Instant::now();
    let db = LogDb::new(Dialect::Postgres).await;
    let js = jetstream::new(client().await);
    let s = TestStream::new(&js).await;
    let (orders, size) = sizes();
    nats_with_duplicates(&js, &s.subject, orders).await;
    // A killed process's messages come back after `ack_wait`.
    pull_consumer(&js, &s.name, "refunds", Duration::from_secs(2), 50).await;
    let ns = unique_ns("batch-crash-nats");
    let cfg = format!("nats,{},{},{ns}", db.schema(), s.name);
    let killed = kill_ten_times(&db, TEST, cfg).await;
    let idem = final_handle(&db, &ns);
    let mut opts = ConsumerOptions::new(CONSUMER);
    opts.concurrency = 2;
    let c = opts.counters.clone();
    let (stop, signal) = shutdown();
    let batch = pg_batch(db.pg().clone(), &idem, size, None);
    let name = s.name.clone();
    let cl = client().await;
    let run =
        tokio::spawn(
            async move { nats::run_batch(cl, &name, "refunds", opts, signal, batch).await },
        );
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let left = pending(&js, &s.name, "refunds").await;
        if db.refunds().await == orders as i64 && left == (0, 0) {
            break;
        }
        assert!(Instant::now() < deadline, "drained within 120 s ({left:?})");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.trigger();
    wait_until("the loop to stop", || run.is_finished()).await;
    once_each(&db, &idem, orders, killed, &c).await;
    eprintln!(
        "IDEM_REPORT batch crash nats: elapsed={:?}",
        started.elapsed()
    );
}
