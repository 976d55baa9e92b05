//! Drives an outbox and a consume log on PostgreSQL, so `idem outbox` and
//! `idem consume` have something to show: business transactions that enqueue
//! messages, a relay to a RabbitMQ broker (or to a port where none listens),
//! a consumer that applies each message once.
//!
//! ```text
//! export DATABASE_URL=postgres://postgres@127.0.0.1:5432/test
//! alias demo='cargo run -q -p idem-cli --example pipeline -- $DATABASE_URL'
//! demo enqueue order.created 1 20
//! demo relay amqp://127.0.0.1:5673/%2f 5       # no broker there: an outage
//! idem outbox                                   # pending grows, so does the lag
//! demo consume amqp://127.0.0.1:5672/%2f order.created shop 10 &
//! demo relay amqp://127.0.0.1:5672/%2f 5
//! idem -n shop consume
//! ```
//!
//! `enqueue TOPIC FROM TO` runs one business transaction per order
//! `o-FROM` … `o-TO` (an order row and its message); `relay BROKER SECS`
//! runs one relay for SECS seconds, parking a message after 3 refusals (a
//! topic no queue is named after comes back unroutable); `consume BROKER
//! QUEUE NS SECS` declares QUEUE, runs a consumer on it for SECS seconds
//! under namespace NS (`refunds` for a queue whose name holds `refund`,
//! else `billing`), then deletes the queue (a demo leaves nothing behind on
//! the broker).

use std::sync::Arc;
use std::time::Duration;

use idem::consume::{ConsumerOptions, Delivery};
use idem::outbox::{Outbox, Relay, RelayCounters as R, RelayOptions};
use idem::sqlx;
use idem::store::sql::SqlStore;

#[derive(Debug)]
enum AppError {
    Idem(idem::Error),
    Db(sqlx::Error),
    Bad(String),
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppError::Idem(e) => write!(f, "{e}"),
            AppError::Db(e) => write!(f, "{e}"),
            AppError::Bad(e) => write!(f, "bad message: {e}"),
        }
    }
}

impl std::error::Error for AppError {}

impl From<idem::Error> for AppError {
    fn from(e: idem::Error) -> Self {
        AppError::Idem(e)
    }
}

impl From<sqlx::Error> for AppError {
    fn from(e: sqlx::Error) -> Self {
        AppError::Db(e)
    }
}

/// Refunds an order once, however often its message arrives.
#[idem::consume_once(msg_id = "<msg_id>", biz_id = "<order>", tx = tx,
                     consumer = "refunds", msg_type = "refund", handle = h)]
async fn refund(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    h: &idem::Idem,
    msg_id: &str,
    order: &str,
) -> Result<idem::Consumed<()>, AppError> {
    sqlx::query("UPDATE demo_orders SET refunded = refunded + 1 WHERE order_no = $1")
        .bind(order)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Bills an order once, however often its message arrives.
#[idem::consume_once(msg_id = "<msg_id>", biz_id = "<order>", tx = tx,
                     consumer = "billing", msg_type = "order", handle = h)]
async fn bill(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    h: &idem::Idem,
    msg_id: &str,
    order: &str,
) -> Result<idem::Consumed<()>, AppError> {
    sqlx::query("UPDATE demo_orders SET billed = billed + 1 WHERE order_no = $1")
        .bind(order)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// One delivery of `queue`: refunds from a queue named `…refund…`, bills
/// from any other, in a transaction of its own.
async fn handle(
    pool: sqlx::PgPool,
    h: Arc<idem::Idem>,
    queue: Arc<str>,
    d: Delivery,
) -> Result<(), AppError> {
    let body: serde_json::Value =
        serde_json::from_slice(&d.payload).map_err(|e| AppError::Bad(e.to_string()))?;
    let order = body["order"]
        .as_str()
        .ok_or(AppError::Bad("no order".into()))?;
    let id = d.id.ok_or(AppError::Bad("no message id".into()))?;
    let mut tx = pool.begin().await?;
    let _applied_or_duplicate = if queue.contains("refund") {
        refund(&mut tx, &h, &id, order).await?
    } else {
        bill(&mut tx, &h, &id, order).await?
    };
    tx.commit().await?;
    Ok(())
}

fn arg(args: &[String], i: usize, what: &str) -> Result<String, String> {
    args.get(i).cloned().ok_or(format!("missing {what}"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: pipeline postgres://… enqueue TOPIC FROM TO | relay BROKER SECS \
                 | consume BROKER QUEUE NAMESPACE SECS";
    let (Some(url), Some(cmd)) = (args.first(), args.get(1)) else {
        return Err(usage.into());
    };
    let pool = sqlx::PgPool::connect(url).await?;
    let store = SqlStore::postgres(pool.clone());
    store.migrate().await?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS demo_orders \
         (order_no TEXT PRIMARY KEY, billed INT NOT NULL DEFAULT 0, refunded INT NOT NULL DEFAULT 0)",
    )
    .execute(&pool)
    .await?;
    let secs = |i: usize| -> Result<Duration, Box<dyn std::error::Error>> {
        Ok(Duration::from_secs(arg(&args, i, "SECS")?.parse()?))
    };
    match cmd.as_str() {
        "enqueue" => {
            let topic = arg(&args, 2, "TOPIC")?;
            let (from, to): (u64, u64) = (
                arg(&args, 3, "FROM")?.parse()?,
                arg(&args, 4, "TO")?.parse()?,
            );
            for n in from..=to {
                let order = format!("o-{n}");
                let mut tx = pool.begin().await?;
                sqlx::query(
                    "INSERT INTO demo_orders (order_no) VALUES ($1) ON CONFLICT DO NOTHING",
                )
                .bind(&order)
                .execute(&mut *tx)
                .await?;
                let payload = serde_json::json!({ "order": order }).to_string();
                Outbox::enqueue(&mut tx, &topic, &order, payload.as_bytes()).await?;
                tx.commit().await?;
            }
            println!(
                "enqueued {} messages on {topic}",
                to.saturating_sub(from) + 1
            );
        }
        "relay" => {
            let broker = arg(&args, 2, "BROKER")?;
            let mut opts = RelayOptions::new("demo");
            opts.max_attempts = 3;
            opts.retry_max = Duration::from_secs(1);
            opts.publish_timeout = Duration::from_secs(2);
            opts.stats_every = Duration::from_secs(1);
            let c = opts.counters.clone();
            let publisher = idem::outbox::amqp::AmqpPublisher::new(broker);
            let relay = Relay::new(store, publisher, opts);
            let (stop, signal) = idem::consume::shutdown();
            let wait = secs(3)?;
            tokio::spawn(async move {
                tokio::time::sleep(wait).await;
                stop.trigger();
            });
            relay.run(signal).await;
            println!(
                "relay: claimed {}, published {}, refused and retried {}, parked {}, batches given back (broker down) {}",
                R::get(&c.claimed),
                R::get(&c.published),
                R::get(&c.retried),
                R::get(&c.parked),
                R::get(&c.broker_down)
            );
        }
        "consume" => {
            let (broker, queue) = (arg(&args, 2, "BROKER")?, arg(&args, 3, "QUEUE")?);
            let h = idem::Idem::builder()
                .store(store)
                .namespace(arg(&args, 4, "NAMESPACE")?)
                .build()?;
            let h = Arc::new(h);
            let conn = lapin::Connection::connect(&broker, Default::default()).await?;
            let ch = conn.create_channel().await?;
            let declare = lapin::options::QueueDeclareOptions::default();
            ch.queue_declare(queue.as_str().into(), declare, Default::default())
                .await?;
            let opts = ConsumerOptions::new(queue.clone());
            let c = opts.counters.clone();
            let (stop, signal) = idem::consume::shutdown();
            let wait = secs(5)?;
            tokio::spawn(async move {
                tokio::time::sleep(wait).await;
                stop.trigger();
            });
            let name: Arc<str> = queue.as_str().into();
            idem::consume::amqp::run(&broker, &queue, opts, signal, move |d| {
                handle(pool.clone(), h.clone(), name.clone(), d)
            })
            .await;
            ch.queue_delete(queue.as_str().into(), Default::default())
                .await?;
            let get = idem::consume::Counters::get;
            println!(
                "consumer: delivered {}, acked {}",
                get(&c.delivered),
                get(&c.acked)
            );
        }
        _ => return Err(usage.into()),
    }
    Ok(())
}
