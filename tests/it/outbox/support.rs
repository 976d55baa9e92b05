//! Fixtures of the outbox tests: producers (business transactions on
//! PostgreSQL, MariaDB or SQLite that insert an order and enqueue its
//! message, some rolled back), the consumer (`#[consume_once]` over
//! PostgreSQL, one effect row per applied message), relays run until the
//! outbox is drained, and the figures each test reports.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem::Consumed;
use idem::consume::{Counters, Delivery, Shutdown};
use idem::db::Dialect;
use idem::outbox::{MessageId, OutboxTable, Relay};

use crate::consume::support::{LogDb, Pool};
use crate::support::AppError;

/// The payload the producers enqueue.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct OrderMsg {
    /// Set from the broker's message id by the handler.
    #[serde(skip)]
    pub(crate) id: String,
    pub(crate) topic: String,
    pub(crate) business_id: String,
    pub(crate) step: i64,
    /// The consume log's business key, `topic/business id`: set by the handler.
    #[serde(skip)]
    pub(crate) key: String,
}

/// One effect per message, whatever the broker delivers.
#[idem::consume_once(msg_id = "<msg.id>", biz_id = "<msg.key>", tx = tx,
                     consumer = "outbox-it", msg_type = "order", handle = idem)]
pub(crate) async fn apply(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    idem: &idem::Idem,
    msg: &OrderMsg,
) -> Result<Consumed<()>, AppError> {
    sqlx::query("INSERT INTO effects (business_id, topic, msg_id, step) VALUES ($1, $2, $3, $4)")
        .bind(&msg.business_id)
        .bind(&msg.topic)
        .bind(&msg.id)
        .bind(msg.step)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The producing service's database: `orders` beside idem's tables (the
/// outbox among them, by `migrate()`).
pub(crate) async fn producer_db(dialect: Dialect) -> LogDb {
    let db = LogDb::with_pool(dialect, 8).await;
    db.exec("CREATE TABLE orders (business_id VARCHAR(64) NOT NULL, n INT NOT NULL)")
        .await;
    db
}

/// The consuming service's database: `effects` and the consume log.
pub(crate) async fn consumer_db() -> LogDb {
    let db = LogDb::with_pool(Dialect::Postgres, 12).await;
    db.exec("CREATE TABLE effects (business_id VARCHAR(64) NOT NULL, topic VARCHAR(255) NOT NULL, msg_id VARCHAR(64) NOT NULL, step BIGINT NOT NULL, seq BIGSERIAL)")
        .await;
    db
}

/// One business transaction: an order row and its message; committed, or
/// rolled back after the enqueue. Conflicts with a concurrent transaction are
/// retried as a whole; any other error fails the test.
pub(crate) async fn business_tx(
    db: &LogDb,
    table: OutboxTable<'_>,
    msg: &OrderMsg,
    rollback: bool,
) -> MessageId {
    for _ in 0..20 {
        match try_business_tx(db, table, msg, rollback).await {
            Ok(id) => return id,
            Err(AppError::Idem(idem::Error::TxConflict { .. })) => continue,
            Err(AppError::Db(e)) if idem::db::is_retryable_conflict(&e) => continue,
            Err(e) => panic!("business transaction {}: {e}", msg.business_id),
        }
    }
    panic!("business transaction {} kept conflicting", msg.business_id)
}

/// One attempt of [`business_tx`].
pub(crate) async fn try_business_tx(
    db: &LogDb,
    table: OutboxTable<'_>,
    msg: &OrderMsg,
    rollback: bool,
) -> Result<MessageId, AppError> {
    let payload = serde_json::to_vec(msg).unwrap();
    macro_rules! run {
        ($tx:expr, $insert:literal) => {{
            let mut tx = $tx;
            sqlx::query($insert)
                .bind(&msg.business_id)
                .bind(msg.step)
                .execute(&mut *tx)
                .await?;
            let id = table
                .enqueue(&mut tx, &msg.topic, &msg.business_id, &payload)
                .await?;
            if rollback {
                tx.rollback().await?;
            } else {
                tx.commit().await?;
            }
            Ok(id)
        }};
    }
    match &db.pool {
        Pool::Pg(p) => run!(p.begin().await?, "INSERT INTO orders VALUES ($1, $2)"),
        Pool::My(p) => run!(p.begin().await?, "INSERT INTO orders VALUES (?, ?)"),
        Pool::Lite(p) => run!(
            p.begin_with("BEGIN IMMEDIATE").await?,
            "INSERT INTO orders VALUES (?, ?)"
        ),
    }
}

/// `n` business transactions on `topic` from 8 concurrent callers started
/// behind a barrier; every 10th rolls back. The committed messages' ids.
pub(crate) async fn enqueue_many(db: &Arc<LogDb>, topic: &str, n: usize) -> Vec<MessageId> {
    let callers = 8;
    let barrier = Arc::new(tokio::sync::Barrier::new(callers));
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..callers {
        let (db, barrier, topic) = (db.clone(), barrier.clone(), topic.to_owned());
        tasks.spawn(async move {
            barrier.wait().await;
            let mut committed = Vec::new();
            for i in (c..n).step_by(callers) {
                let msg = OrderMsg {
                    id: String::new(),
                    topic: topic.clone(),
                    business_id: format!("o-{i}"),
                    step: 0,
                    key: String::new(),
                };
                let rollback = i % 10 == 3;
                let id = business_tx(&db, OutboxTable::default(), &msg, rollback).await;
                if !rollback {
                    committed.push(id);
                }
            }
            committed
        });
    }
    let mut all = Vec::new();
    while let Some(r) = tasks.join_next().await {
        all.extend(r.unwrap());
    }
    all.sort();
    all
}

/// The consumer's handler: parse, consume once in a transaction, commit.
pub(crate) async fn handle(
    pool: sqlx::PgPool,
    idem: Arc<idem::Idem>,
    d: Delivery,
) -> Result<(), AppError> {
    let mut msg: OrderMsg = serde_json::from_slice(&d.payload)
        .map_err(|e| AppError::Business(format!("bad payload: {e}")))?;
    msg.id =
        d.id.ok_or_else(|| AppError::Business("no message id".into()))?;
    msg.key = format!("{}/{}", msg.topic, msg.business_id);
    let mut tx = pool.begin().await?;
    let _ = apply(&mut tx, &idem, &msg).await?;
    tx.commit().await?;
    Ok(())
}

/// Stops a consumer once `effects` holds `expected` rows and nothing was
/// delivered for `idle`; fails the test after `limit`.
pub(crate) fn stop_when_applied(
    db: Arc<LogDb>,
    counters: Arc<Counters>,
    stop: Shutdown,
    expected: i64,
    idle: Duration,
    limit: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let started = Instant::now();
        let mut last = u64::MAX;
        loop {
            tokio::time::sleep(idle).await;
            let delivered = Counters::get(&counters.delivered);
            let applied = db.scalar("SELECT COUNT(*) FROM effects").await;
            if applied >= expected && delivered == last {
                stop.trigger();
                return;
            }
            if started.elapsed() > limit {
                stop.trigger();
                panic!(
                    "{applied} of {expected} messages applied after {limit:?} ({delivered} delivered)"
                );
            }
            last = delivered;
        }
    })
}

/// Runs `relay` until `done()` and the outbox has no pending message left
/// (or `limit`).
pub(crate) async fn relay_until_drained(
    relay: Arc<Relay>,
    db: &LogDb,
    done: impl Fn() -> bool,
    limit: Duration,
) {
    let (stop, signal) = idem::consume::shutdown();
    let task = tokio::spawn({
        let relay = relay.clone();
        async move { relay.run(signal).await }
    });
    let started = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if done() && pending(db).await == 0 {
            break;
        }
        assert!(
            started.elapsed() < limit,
            "{} messages still pending after {limit:?}",
            pending(db).await
        );
    }
    stop.trigger();
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the relay stops")
        .unwrap();
}

/// Messages neither sent nor parked.
pub(crate) async fn pending(db: &LogDb) -> i64 {
    db.scalar("SELECT COUNT(*) FROM idem_outbox WHERE state = 0")
        .await
}

/// The effects' message ids, sorted, and how many there are per id at most.
pub(crate) async fn applied_ids(db: &LogDb) -> (Vec<String>, i64) {
    let mut ids: Vec<String> = sqlx::query_scalar("SELECT msg_id FROM effects")
        .fetch_all(db.pg())
        .await
        .unwrap();
    ids.sort();
    let most = db
        .scalar(
            "SELECT COALESCE(MAX(c), 0) FROM (SELECT COUNT(*) AS c FROM effects GROUP BY msg_id) m",
        )
        .await;
    (ids, most)
}

/// A consumer handle under one namespace for every process of a test.
pub(crate) fn consumer_handle(db: &LogDb, ns: &str) -> Arc<idem::Idem> {
    Arc::new(
        idem::Idem::builder()
            .store(db.store.clone())
            .namespace(ns)
            .build()
            .unwrap(),
    )
}

/// The relay options of the tests: short pauses, a lease of 3 s.
pub(crate) fn relay_opts(name: &str) -> idem::outbox::RelayOptions {
    let mut o = idem::outbox::RelayOptions::new(name);
    o.lease = Duration::from_secs(3);
    o.idle_poll = Duration::from_millis(50);
    o.retry_min = Duration::from_millis(50);
    o.retry_max = Duration::from_millis(400);
    o
}

/// The line every outbox test prints for the report.
#[allow(clippy::too_many_arguments)]
pub(crate) fn report(
    what: &str,
    dialect: Dialect,
    broker: &str,
    enqueued: usize,
    committed: usize,
    c: &idem::outbox::RelayCounters,
    delivered: u64,
    applied: i64,
    elapsed: Duration,
) {
    use idem::outbox::RelayCounters as R;
    eprintln!(
        "IDEM_OUTBOX {what} db={dialect:?} broker={broker} enqueued={enqueued} committed={committed} \
         published={} broker_duplicates={} delivered={delivered} applied={applied} parked={} \
         retried={} broker_down={} elapsed={elapsed:?}",
        R::get(&c.published),
        R::get(&c.duplicates),
        R::get(&c.parked),
        R::get(&c.retried),
        R::get(&c.broker_down),
    );
}
