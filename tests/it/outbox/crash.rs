//! The relay process SIGKILLed between the broker's confirmation and the sent
//! mark, ten times: each relay process is this test binary run again (the
//! child mode is chosen by an environment variable), whose after-confirm hook
//! reports the confirmed batch and then blocks until the parent kills it. The
//! killed batches are published again after their lease: RabbitMQ holds
//! duplicates, and the consumer's effects still equal the committed messages.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem::consume::Counters;
use idem::db::Dialect;
use idem::outbox::RelayCounters as R;
use idem::store::sql::SqlStore;

use crate::consume::support::LogDb;
use crate::outbox::brokers::Target;
use crate::outbox::support::{
    applied_ids, consumer_db, consumer_handle, enqueue_many, producer_db, relay_opts,
    relay_until_drained, report,
};
use crate::support::unique_ns;

const CHILD_ENV: &str = "IDEM_OUTBOX_RELAY_CHILD";
const MARK: &str = "IDEM_OUTBOX_CONFIRMED";
const TEST: &str = "outbox::crash::relay_killed_between_confirm_and_mark_ten_times";

/// The relay process: relays `schema`'s outbox to `queue` and, on its first
/// confirmed batch, prints [`MARK`] and blocks (the parent SIGKILLs it).
async fn child_relay(cfg: &str) {
    let (schema, queue) = cfg.split_once(',').unwrap();
    let pool = LogDb::attach_pg(schema, 4).await;
    let mut opts = relay_opts("crash-child");
    opts.batch = 50;
    opts.lease = Duration::from_secs(1);
    opts.after_confirm = Some(Arc::new(|ids: &[idem::outbox::MessageId]| {
        use std::io::Write as _;
        let mut out = std::io::stdout();
        let _ = writeln!(out, "{MARK} {}", ids.len());
        let _ = out.flush();
        loop {
            std::thread::sleep(Duration::from_secs(60));
        }
    }));
    let publisher =
        idem::outbox::amqp::AmqpPublisher::new(crate::consume::amqp_support::amqp_url());
    let relay = idem::outbox::Relay::new(SqlStore::postgres(pool), publisher, opts);
    let _ = queue;
    let (_stop, signal) = idem::consume::shutdown();
    relay.run(signal).await;
}

/// Runs one relay process until it reports a confirmed batch, then SIGKILLs
/// it; the size of that batch.
pub(crate) fn run_and_kill(schema: &str, queue: &str) -> usize {
    let cfg = format!("{schema},{queue}");
    crate::support::child::run_until_mark_then_kill(
        TEST,
        (CHILD_ENV, &cfg),
        MARK,
        "confirmed a batch",
    )
}

/// 1,000 business transactions (900 committed) on PostgreSQL; ten relay
/// processes each killed after a confirmation and before its mark; then a
/// relay that finishes. Every committed message is applied exactly once;
/// the broker saw at least one duplicate per kill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_killed_between_confirm_and_mark_ten_times() {
    if let Ok(cfg) = std::env::var(CHILD_ENV) {
        return child_relay(&cfg).await;
    }
    let started = Instant::now();
    let producer = Arc::new(producer_db(Dialect::Postgres).await);
    let consumer = Arc::new(consumer_db().await);
    let target = Target::new(crate::outbox::brokers::Broker::Rabbit).await;
    let committed = enqueue_many(&producer, &target.topic(), 1000).await;
    let schema = producer.schema().to_owned();
    let queue = target.topic();
    let mut unmarked = 0;
    for _ in 0..10 {
        let (s, q) = (schema.clone(), queue.clone());
        unmarked += tokio::task::spawn_blocking(move || run_and_kill(&s, &q))
            .await
            .unwrap();
    }
    assert!(
        unmarked >= 10,
        "each killed relay left a confirmed batch unmarked"
    );
    let sent_before = producer
        .scalar("SELECT COUNT(*) FROM idem_outbox WHERE state = 1")
        .await;
    assert_eq!(sent_before, 0, "no killed relay marked anything sent");
    let relay = Arc::new(
        target
            .relay(producer.store.clone(), relay_opts("crash-final"))
            .await,
    );
    relay_until_drained(relay.clone(), &producer, || true, Duration::from_secs(120)).await;
    let idem = consumer_handle(&consumer, &unique_ns("obx-crash"));
    let counters = target
        .consume(
            consumer.clone(),
            idem,
            committed.len() as i64,
            Duration::from_secs(120),
        )
        .await;
    let delivered = Counters::get(&counters.delivered);
    let (ids, most) = applied_ids(&consumer).await;
    let want: Vec<String> = committed.iter().map(|i| i.to_string()).collect();
    assert_eq!(ids, want, "effects equal the committed messages");
    assert_eq!(most, 1, "each applied once");
    assert!(
        delivered >= committed.len() as u64 + 10,
        "the broker held the republished duplicates ({delivered} delivered)"
    );
    let c = relay.counters();
    eprintln!(
        "IDEM_OUTBOX crash kills=10 unmarked_confirmed={unmarked} final_relay_published={} duplicates_delivered={}",
        R::get(&c.published),
        delivered - committed.len() as u64
    );
    report(
        "crash",
        Dialect::Postgres,
        "rabbitmq",
        1000,
        committed.len(),
        c,
        delivered,
        ids.len() as i64,
        started.elapsed(),
    );
}
