//! Consume-once over a broker (RabbitMQ, NATS JetStream) into PostgreSQL: the
//! pieces both brokers' rows share. One call publishes one message and waits
//! until a consumer has committed it: the same publisher, broker, database and
//! consumer concurrency on both sides, so the difference is the consumer.
//!
//! - A: idem's consumer loop (`idem::consume::amqp::run` / `nats::run`) with a
//!   `#[consume_once]` handler: `BEGIN`, a savepoint, the log row's `INSERT`,
//!   `COMMIT` (the savepoint is left to it), then the loop acknowledges;
//! - B: the native floor: a loop by hand on the same client crate, the same
//!   prefetch and concurrency, `BEGIN`, the raw log `INSERT`, `COMMIT`, ack.
//!
//! The handlers signal the publisher after their commit (before the ack, which
//! both loops send right after). Queues and streams have fresh names and are
//! deleted at the end ([`cleanup`]); the log table is `idem_bench_consume_log`
//! (the attribute takes it as a literal), dropped at the end.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idem::Consumed;
use sqlx::{AssertSqlSafe, PgPool};
use tokio::sync::{oneshot, watch};

use crate::Env;
use crate::harness::{Op, Side, op};
use crate::sql::{Db, Pool};

const LOG: &str = "idem_bench_consume_log";
/// Messages a consumer may hold unacknowledged, and handlers at once (both sides).
pub(crate) const PREFETCH: u16 = 64;
pub(crate) const CONCURRENCY: usize = 32;
/// A message not committed within this fails the run.
const DEADLINE: Duration = Duration::from_secs(10);

/// Broker objects this run created, deleted by [`cleanup`].
pub(crate) enum Created {
    Queue(String),
    Stream(String),
}

static CREATED: Mutex<Vec<Created>> = Mutex::new(Vec::new());

pub(crate) fn created(c: Created) {
    CREATED.lock().unwrap_or_else(|e| e.into_inner()).push(c);
}

pub(crate) fn amqp_url() -> String {
    crate::env_or("IDEM_BENCH_AMQP", "amqp://guest:guest@127.0.0.1:5672/%2f")
}

pub(crate) fn nats_url() -> String {
    crate::env_or("IDEM_BENCH_NATS", "nats://127.0.0.1:4222")
}

/// The publishers waiting for their message's commit, by message id.
#[derive(Default)]
pub(crate) struct Waiters(Mutex<HashMap<String, oneshot::Sender<()>>>);

impl Waiters {
    fn wait(&self, id: &str) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_owned(), tx);
        rx
    }

    /// The message `id` committed.
    pub(crate) fn done(&self, id: &str) {
        let tx = self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        if let Some(tx) = tx {
            let _ = tx.send(());
        }
    }
}

/// Stops a side's consumer loop when the side is dropped (after its scenario).
pub(crate) struct Stop(Box<dyn Fn() + Send + Sync>);

impl Stop {
    pub(crate) fn new(f: impl Fn() + Send + Sync + 'static) -> Arc<Stop> {
        Arc::new(Stop(Box::new(f)))
    }
    /// A watch channel for a hand-written loop: the receiver turns `true`.
    pub(crate) fn channel() -> (Arc<Stop>, watch::Receiver<bool>) {
        let (tx, rx) = watch::channel(false);
        (Stop::new(move || _ = tx.send(true)), rx)
    }
}

impl Drop for Stop {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// What both sides' consumers work with.
#[derive(Clone)]
pub(crate) struct Consumer {
    pub(crate) pg: PgPool,
    pub(crate) idem: idem::Idem,
    pub(crate) waiters: Arc<Waiters>,
    insert: Arc<str>,
}

impl Consumer {
    pub(crate) async fn new(env: &Env) -> anyhow::Result<Consumer> {
        let pool = Pool::connect(env, Db::Postgres, CONCURRENCY as u32 + 4).await?;
        for s in idem::consume::ddl(idem::db::Dialect::Postgres, LOG)? {
            pool.exec(&s).await?;
        }
        let Pool::Pg(pg) = pool else {
            anyhow::bail!("expected a PostgreSQL pool")
        };
        let idem = idem::Idem::builder()
            .store(idem::MemoryStore::new())
            .namespace(env.ns.clone())
            .build()?;
        let insert = format!(
            "INSERT INTO {LOG} (msg_key, biz_key, consumed_at, expires_at) \
             VALUES ($1, NULL, statement_timestamp(), statement_timestamp() + INTERVAL '7 days')"
        );
        Ok(Consumer {
            pg,
            idem,
            waiters: Arc::default(),
            insert: insert.into(),
        })
    }

    /// A's handler body: the attribute in a transaction, then the signal.
    pub(crate) async fn through_idem(&self, id: Option<String>) -> anyhow::Result<()> {
        let id = id.ok_or_else(|| anyhow::anyhow!("a message without an id"))?;
        let mut tx = self.pg.begin().await?;
        let out = on_message(&mut tx, &self.idem, &id).await?;
        anyhow::ensure!(matches!(out, Consumed::Processed(())), "{id}: {out:?}");
        tx.commit().await?;
        self.waiters.done(&id);
        Ok(())
    }

    /// B's handler body: the raw log insert in a transaction, then the signal.
    pub(crate) async fn by_hand(&self, id: Option<String>) -> anyhow::Result<()> {
        let id = id.ok_or_else(|| anyhow::anyhow!("a message without an id"))?;
        let mut tx = self.pg.begin().await?;
        let n = sqlx::query(AssertSqlSafe(Arc::clone(&self.insert)))
            .bind(format!("{}:bench-consumer:{id}", self.idem.namespace()))
            .execute(&mut *tx)
            .await?
            .rows_affected();
        anyhow::ensure!(n == 1, "{id}: the log insert wrote {n} rows");
        tx.commit().await?;
        self.waiters.done(&id);
        Ok(())
    }
}

/// The log row only: the cost measured is the consume log's.
#[idem::consume_once(msg_id = "<id>", tx = tx, consumer = "bench-consumer",
                     log = "idem_bench_consume_log", handle = idem)]
async fn on_message(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    idem: &idem::Idem,
    id: &str,
) -> Result<Consumed<()>, idem::Error> {
    Ok(())
}

/// One call: publish message `<tag>-<i>` with `publish`, wait for its commit.
/// `stop` is held by the op, so the loop stops when the side is dropped.
pub(crate) fn publish_and_wait<P, Fut>(
    waiters: Arc<Waiters>,
    tag: String,
    stop: Arc<Stop>,
    publish: P,
) -> Op
where
    P: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let publish = Arc::new(publish);
    op(move |i| {
        let (waiters, publish, _stop) = (waiters.clone(), publish.clone(), stop.clone());
        let id = format!("{tag}-{i}");
        async move {
            let done = waiters.wait(&id);
            publish(id.clone()).await?;
            match tokio::time::timeout(DEADLINE, done).await {
                Ok(Ok(())) => Ok(()),
                _ => anyhow::bail!("message {id} was not consumed within {DEADLINE:?}"),
            }
        }
    })
}

/// A's and B's sides of one broker.
pub(crate) fn pair(a: Op, b: Op, broker: &'static str) -> Vec<Side> {
    let (an, bn) = match broker {
        "amqp" => (
            "A idem amqp::run + #[consume_once] (RabbitMQ)",
            "B native floor: lapin loop + log INSERT + ack by hand",
        ),
        _ => (
            "A idem nats::run + #[consume_once] (JetStream)",
            "B native floor: pull loop + log INSERT + ack by hand",
        ),
    };
    crate::redis::sides([a, b], [an, bn])
}

/// Deletes the queues and streams of the run, and the log table.
pub(crate) async fn cleanup(env: &Env) -> anyhow::Result<()> {
    let created: Vec<Created> =
        std::mem::take(&mut *CREATED.lock().unwrap_or_else(|e| e.into_inner()));
    let (queues, streams): (Vec<_>, Vec<_>) = created
        .into_iter()
        .partition(|c| matches!(c, Created::Queue(_)));
    if !queues.is_empty() {
        crate::consume_amqp::delete(&queues).await?;
    }
    if !streams.is_empty() {
        crate::consume_nats::delete(&streams).await?;
    }
    let pool = Pool::connect(env, Db::Postgres, 1).await?;
    pool.exec(&format!("DROP TABLE IF EXISTS {LOG}")).await?;
    Ok(())
}
