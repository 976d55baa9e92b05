//! The at-least-once consumer recipe (seed §4.5, §6.1): refund messages, some
//! delivered twice by the publisher (the same message id, or the same order
//! under a new id); exactly one refund per order, on the embedded SQLite, with
//! the broker of `AMQP_URL` (RabbitMQ) or `NATS_URL` (NATS JetStream).
//!
//! ```text
//! cargo run --example consumer --features rabbitmq,nats                  # RabbitMQ on 127.0.0.1
//! NATS_URL=nats://127.0.0.1:4222 cargo run --example consumer --features rabbitmq,nats
//! ```
//!
//! The consume log row and the refund row are written in one transaction;
//! the loop acknowledges only after the commit. A random queue (or stream)
//! is created and deleted.

mod support;

use std::sync::Arc;
use std::time::Duration;

use idem::Consumed;
use idem::consume::{ConsumerOptions, Counters, Delivery, Shutdown, shutdown};

#[derive(Debug, thiserror::Error)]
enum AppError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error("bad message: {0}")]
    Bad(String),
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Refund {
    #[serde(skip)]
    id: String,
    order_no: String,
    cents: i64,
}

/// One refund per order, however often the broker delivers it.
#[idem::consume_once(msg_id = "<msg.id>", biz_id = "<msg.order_no>", tx = tx,
                     consumer = "refund-service", msg_type = "refund")]
async fn refund(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    msg: &Refund,
) -> Result<Consumed<()>, AppError> {
    sqlx::query("INSERT INTO refunds (order_no, cents) VALUES (?, ?)")
        .bind(&msg.order_no)
        .bind(msg.cents)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

async fn handle(pool: sqlx::SqlitePool, d: Delivery) -> Result<(), AppError> {
    let mut msg: Refund =
        serde_json::from_slice(&d.payload).map_err(|e| AppError::Bad(e.to_string()))?;
    msg.id = d.id.ok_or_else(|| AppError::Bad("no message id".into()))?;
    let mut tx = pool.begin().await?;
    let _processed_or_duplicate = refund(&mut tx, &msg).await?;
    tx.commit().await?; // the loop acks after this returns
    Ok(())
}

/// 60 messages about 50 orders: 5 re-sent with the same id, 5 under a new id.
fn messages() -> Vec<(String, Refund)> {
    let mut out = Vec::new();
    for i in 0..50 {
        let r = |id: String| {
            (
                id,
                Refund {
                    id: String::new(),
                    order_no: format!("R-{i}"),
                    cents: 100 + i,
                },
            )
        };
        out.push(r(format!("msg-{i}")));
        if i % 10 == 3 {
            out.push(r(format!("msg-{i}")));
        }
        if i % 10 == 7 {
            out.push(r(format!("msg-{i}-resent")));
        }
    }
    out
}

fn stop_when_idle(counters: Arc<Counters>, stop: Shutdown) {
    tokio::spawn(async move {
        let mut last = u64::MAX;
        loop {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let now = Counters::get(&counters.acked);
            if now > 0 && now == last {
                return stop.trigger();
            }
            last = now;
        }
    });
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("idem-consumer-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let opts = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.join("shop.db"))
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(10));
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(4)
        .test_before_acquire(false)
        .connect_with(opts)
        .await?;
    // `migrate()` creates idem's tables, the consume log among them.
    let store = idem::SqlStore::sqlite(pool.clone());
    store.migrate().await?;
    idem::install(
        idem::Idem::builder()
            .store(store)
            .namespace("shop")
            .build()?,
    )
    .map_err(|_| "a handle was installed already")?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS refunds (order_no TEXT NOT NULL, cents INTEGER NOT NULL)",
    )
    .execute(&pool)
    .await?;

    let mut opts = ConsumerOptions::new("refund-service");
    opts.prefetch = 16;
    opts.concurrency = 4;
    let counters = opts.counters.clone();
    let (stop, signal) = shutdown();
    stop_when_idle(counters.clone(), stop);
    let sent = messages();
    let handler = {
        let pool = pool.clone();
        move |d| handle(pool.clone(), d)
    };
    let db = format!("SQLite at {}", dir.join("shop.db").display());
    let broker = match support::var(support::NATS_URL) {
        Some(url) => {
            support::print_backends(&[
                (
                    "broker",
                    format!("NATS JetStream at {}", support::redact(&url)),
                ),
                ("log, refunds and records", db),
            ]);
            nats(&url, &sent, opts, signal, handler).await?
        }
        None => {
            let url = support::var(support::AMQP_URL)
                .unwrap_or_else(|| "amqp://guest:guest@127.0.0.1:5672/%2f".into());
            support::print_backends(&[
                ("broker", format!("RabbitMQ at {}", support::redact(&url))),
                ("log, refunds and records", db),
            ]);
            rabbitmq(&url, &sent, opts, signal, handler).await?
        }
    };

    let refunds: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM refunds")
        .fetch_one(&pool)
        .await?;
    let doubled: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM (SELECT order_no FROM refunds GROUP BY order_no HAVING COUNT(*) > 1)",
    )
    .fetch_one(&pool)
    .await?;
    let stats = idem::global()?.stats();
    println!("broker      messages  delivered  processed  duplicates  refunds  doubled  verdict");
    println!(
        "{broker:<11} {:>8}  {:>9}  {:>9}  {:>10}  {refunds:>7}  {doubled:>7}  {}",
        sent.len(),
        Counters::get(&counters.delivered),
        stats.count("executed"),
        stats.count("duplicate_message"),
        if refunds == 50 && doubled == 0 {
            "PASS"
        } else {
            "FAIL"
        },
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

async fn rabbitmq<H, F>(
    url: &str,
    sent: &[(String, Refund)],
    opts: ConsumerOptions,
    signal: idem::consume::ShutdownSignal,
    handler: H,
) -> Result<&'static str, Box<dyn std::error::Error>>
where
    H: Fn(Delivery) -> F + Send + Sync + 'static,
    F: std::future::Future<Output = Result<(), AppError>> + Send + 'static,
{
    use lapin::options::{BasicPublishOptions, QueueDeclareOptions, QueueDeleteOptions};
    let conn = lapin::Connection::connect(url, lapin::ConnectionProperties::default()).await?;
    let ch = conn.create_channel().await?;
    let queue = format!("refunds-{}", std::process::id());
    ch.queue_declare(
        queue.as_str().into(),
        QueueDeclareOptions::default(),
        Default::default(),
    )
    .await?;
    for (id, msg) in sent {
        let props = lapin::BasicProperties::default().with_message_id(id.as_str().into());
        ch.basic_publish(
            "".into(),
            queue.as_str().into(),
            BasicPublishOptions::default(),
            &serde_json::to_vec(msg)?,
            props,
        )
        .await?;
    }
    idem::consume::amqp::run(url, &queue, opts, signal, handler).await;
    ch.queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
        .await?;
    Ok("rabbitmq")
}

async fn nats<H, F>(
    url: &str,
    sent: &[(String, Refund)],
    opts: ConsumerOptions,
    signal: idem::consume::ShutdownSignal,
    handler: H,
) -> Result<&'static str, Box<dyn std::error::Error>>
where
    H: Fn(Delivery) -> F + Send + Sync + 'static,
    F: std::future::Future<Output = Result<(), AppError>> + Send + 'static,
{
    use async_nats::jetstream::{self, consumer::pull, stream};
    let client = async_nats::connect(url).await?;
    let js = jetstream::new(client.clone());
    let name = format!("REFUNDS_{}", std::process::id());
    let subject = format!("refunds.{}", std::process::id());
    let s = js
        .create_stream(stream::Config {
            name: name.clone(),
            subjects: vec![subject.clone()],
            duplicate_window: Duration::from_millis(100),
            ..Default::default()
        })
        .await?;
    s.create_consumer(pull::Config {
        durable_name: Some("refunds".into()),
        ..Default::default()
    })
    .await?;
    // JetStream drops a re-sent `Nats-Msg-Id` inside its duplicate window:
    // send the repeats after it, so they reach the consumer like a retry would.
    let mut seen = std::collections::HashSet::new();
    let (first, repeats): (Vec<_>, Vec<_>) = sent.iter().partition(|(id, _)| seen.insert(id));
    for (i, batch) in [first, repeats].into_iter().enumerate() {
        if i == 1 {
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        for (id, msg) in batch {
            let mut h = async_nats::HeaderMap::new();
            h.insert(idem::consume::nats::MSG_ID_HEADER, id.as_str());
            js.publish_with_headers(subject.clone(), h, serde_json::to_vec(msg)?.into())
                .await?
                .await?;
        }
    }
    idem::consume::nats::run(client, &name, "refunds", opts, signal, handler).await;
    js.delete_stream(&name).await?;
    Ok("nats")
}
