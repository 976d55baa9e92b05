//! `ordered: true` under overlapping transactions (PostgreSQL, MariaDB; two
//! relays running): transaction A enqueues `order.created` and stays open
//! while transaction B enqueues `order.paid` for the same business id. B
//! waits for A, so the commit order, the enqueue order (`seq`) and the
//! stream's order all agree: created, then paid.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_nats::jetstream;
use idem::db::Dialect;
use idem::outbox::OutboxTable;

use crate::consume::support::{LogDb, Pool};
use crate::outbox::brokers::{Broker, Target, nats_client, nats_url};
use crate::outbox::support::{pending, producer_db, relay_opts};

/// Enqueues `topic` for `b-1` (ordered) in a transaction, says so on
/// `enqueued`, waits for `hold`, then commits; the commit's place in
/// `commits`.
async fn ordered_tx(
    db: &LogDb,
    topic: &str,
    hold: Duration,
    commits: &AtomicU64,
    enqueued: Option<tokio::sync::oneshot::Sender<()>>,
) -> u64 {
    let t = OutboxTable::default().ordered(true);
    macro_rules! run {
        ($tx:expr) => {{
            let mut tx = $tx;
            t.enqueue(&mut tx, topic, "b-1", topic.as_bytes())
                .await
                .unwrap();
            if let Some(e) = enqueued {
                let _ = e.send(());
            }
            tokio::time::sleep(hold).await;
            tx.commit().await.unwrap();
        }};
    }
    match &db.pool {
        Pool::Pg(p) => run!(p.begin().await.unwrap()),
        Pool::My(p) => run!(p.begin().await.unwrap()),
        Pool::Lite(_) => unreachable!("SQLite writers are serial"),
    }
    commits.fetch_add(1, Ordering::SeqCst)
}

async fn overlapping_transactions_publish_in_commit_order(dialect: Dialect) {
    let producer = Arc::new(producer_db(dialect).await);
    let target = Target::new(Broker::Nats).await;
    let Target::Nats(stream) = &target else {
        unreachable!()
    };
    let (stop, signal) = idem::consume::shutdown();
    let mut relays = Vec::new();
    for name in ["order-a", "order-b"] {
        let mut opts = relay_opts(name);
        opts.idle_poll = Duration::from_millis(10);
        opts.idle_max = Duration::from_millis(20);
        let relay = target.relay(producer.store.clone(), opts).await;
        let s = signal.clone();
        relays.push(tokio::spawn(async move { relay.run(s).await }));
    }
    let commits = Arc::new(AtomicU64::new(0));
    // A: enqueues first, commits after a second.
    let (written, a_enqueued) = tokio::sync::oneshot::channel();
    let a = tokio::spawn({
        let (db, commits) = (producer.clone(), commits.clone());
        async move {
            let hold = Duration::from_secs(1);
            ordered_tx(&db, "order.created", hold, &commits, Some(written)).await
        }
    });
    // B starts once A's message is written, and would commit at once.
    a_enqueued.await.unwrap();
    let b = ordered_tx(&producer, "order.paid", Duration::ZERO, &commits, None).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let a = a.await.unwrap();
    assert!(a < b, "B's commit waited for A's (A #{a}, B #{b})");
    while pending(&producer).await > 0 {
        assert!(Instant::now() < deadline, "not drained");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.trigger();
    for r in relays {
        r.await.unwrap();
    }
    let seqs: Vec<String> = match &producer.pool {
        Pool::Pg(p) => sqlx::query_scalar("SELECT topic FROM idem_outbox ORDER BY seq")
            .fetch_all(p)
            .await
            .unwrap(),
        Pool::My(p) => {
            let v: Vec<Vec<u8>> = sqlx::query_scalar("SELECT topic FROM idem_outbox ORDER BY seq")
                .fetch_all(p)
                .await
                .unwrap();
            v.into_iter()
                .map(|b| String::from_utf8(b).unwrap())
                .collect()
        }
        Pool::Lite(_) => unreachable!(),
    };
    assert_eq!(seqs, ["order.created", "order.paid"], "enqueue order");
    let js = jetstream::new(nats_client(&nats_url()).await);
    let s = js.get_stream(&stream.name).await.unwrap();
    let mut published = Vec::new();
    for seq in 1..=2 {
        let m = s.get_raw_message(seq).await.unwrap();
        published.push(String::from_utf8(m.payload.to_vec()).unwrap());
    }
    assert_eq!(published, ["order.created", "order.paid"], "stream order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_ordered_transactions_publish_in_commit_order_on_postgres() {
    overlapping_transactions_publish_in_commit_order(Dialect::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_ordered_transactions_publish_in_commit_order_on_mariadb() {
    overlapping_transactions_publish_in_commit_order(Dialect::MySql).await;
}
