//! The outbox end to end, on the machine's databases and brokers: business
//! transactions on PostgreSQL, MariaDB or SQLite enqueue messages (every 10th
//! rolls back) while a relay publishes them to RabbitMQ or NATS JetStream,
//! and a `#[consume_once]` consumer applies them: exactly the committed
//! messages arrive, each applied once. PostgreSQL × NATS runs 10,000
//! messages; the other pairs 500 (10,000 with `IDEM_STRESS=1`), so the
//! whole outbox suite stays within minutes of CI.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use idem::consume::Counters;
use idem::db::Dialect;
use idem::outbox::RelayCounters as R;

use crate::outbox::brokers::{Broker, Target};
use crate::outbox::support::{
    applied_ids, consumer_db, consumer_handle, enqueue_many, producer_db, relay_opts,
    relay_until_drained, report,
};
use crate::support::sql::stress;
use crate::support::unique_ns;

async fn end_to_end(dialect: Dialect, broker: Broker, n: usize) {
    let n = if stress() { 10_000 } else { n };
    let started = Instant::now();
    let producer = Arc::new(producer_db(dialect).await);
    let consumer = Arc::new(consumer_db().await);
    let target = Target::new(broker).await;
    let topic = target.topic();
    let relay = Arc::new(
        target
            .relay(producer.store.clone(), {
                // Sized for a loaded machine: a `sent` mark that missed a
                // 5 s op timeout would leave its rows claimed, and they would
                // be published again after the lease (at least once, as
                // documented), which "each published once" below would count.
                let mut o = relay_opts("e2e");
                o.lease = Duration::from_secs(30);
                o.op_timeout = Duration::from_secs(60);
                o.publish_timeout = Duration::from_secs(60);
                o
            })
            .await,
    );
    let done = Arc::new(AtomicBool::new(false));
    // The producers and the relay run at once.
    let producers = tokio::spawn({
        let (producer, done) = (producer.clone(), done.clone());
        async move {
            let ids = enqueue_many(&producer, &topic, n).await;
            done.store(true, Ordering::SeqCst);
            ids
        }
    });
    relay_until_drained(
        relay.clone(),
        &producer,
        || done.load(Ordering::SeqCst),
        Duration::from_secs(240),
    )
    .await;
    let committed = producers.await.unwrap();
    assert_eq!(
        committed.len(),
        n - n / 10,
        "every 10th transaction rolled back"
    );
    let rows = producer.scalar("SELECT COUNT(*) FROM idem_outbox").await;
    assert_eq!(
        rows,
        committed.len() as i64,
        "rolled-back messages left no row"
    );
    let orders = producer.scalar("SELECT COUNT(*) FROM orders").await;
    assert_eq!(orders, committed.len() as i64);
    let c = relay.counters();
    assert_eq!(
        R::get(&c.published),
        committed.len() as u64,
        "each published once"
    );
    assert_eq!(
        R::get(&c.marked),
        committed.len() as u64,
        "each marked sent once"
    );
    assert_eq!(R::get(&c.parked), 0);
    let idem = consumer_handle(&consumer, &unique_ns("obx"));
    let delivered = target
        .consume(
            consumer.clone(),
            idem,
            committed.len() as i64,
            Duration::from_secs(240),
        )
        .await;
    let (ids, most) = applied_ids(&consumer).await;
    let want: Vec<String> = committed.iter().map(|i| i.to_string()).collect();
    assert_eq!(ids, want, "exactly the committed messages were applied");
    assert_eq!(most, 1, "each once");
    report(
        "e2e",
        dialect,
        target.broker(),
        n,
        committed.len(),
        c,
        Counters::get(&delivered.delivered),
        ids.len() as i64,
        started.elapsed(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_nats_10k_committed_messages_arrive_once() {
    end_to_end(Dialect::Postgres, Broker::Nats, 10_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_rabbitmq_committed_messages_arrive_once() {
    end_to_end(Dialect::Postgres, Broker::Rabbit, 500).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_rabbitmq_committed_messages_arrive_once() {
    end_to_end(Dialect::MySql, Broker::Rabbit, 500).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_nats_committed_messages_arrive_once() {
    end_to_end(Dialect::MySql, Broker::Nats, 500).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_rabbitmq_committed_messages_arrive_once() {
    end_to_end(Dialect::Sqlite, Broker::Rabbit, 500).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_nats_committed_messages_arrive_once() {
    end_to_end(Dialect::Sqlite, Broker::Nats, 500).await;
}
