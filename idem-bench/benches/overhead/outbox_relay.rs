//! The outbox relay against a raw publish loop, per broker, in one run
//! (`--outbox`): the same number of messages, published in batches of
//! [`BATCH`] with every message confirmed, by
//!
//! - **raw**: a loop that only publishes (no database), batch after batch;
//! - **relay**: one `Relay` draining a PostgreSQL outbox holding the messages
//!   (claim, publish, confirmations, sent mark), timed from its start until
//!   it marked the last one;
//! - **2 relays**: two relays (two broker connections) on the same table.
//!
//! Sides alternate their order per round so machine noise hits each; the
//! figures are min/median/max over rounds of messages per second and of the
//! per-round ratios. Then the commit-to-confirm latency at light load (one
//! message per transaction, 20 ms apart), with the relay woken by
//! PostgreSQL's `NOTIFY` and without it (polling).

use std::str::FromStr as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, stream};
use idem::outbox::{Relay, RelayCounters as R, RelayOptions};
use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions, QueueDeleteOptions,
    QueuePurgeOptions,
};
use lapin::{BasicProperties, Connection, ConnectionProperties};

use crate::Env;
use crate::consume::{amqp_url, nats_url};
use crate::harness::median;
use crate::run_facts::load1;

const BATCH: usize = 200;
pub(crate) const PAYLOAD: &[u8] = br#"{"topic":"orders","business_id":"o-1","step":0}"#;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Broker {
    Rabbit,
    Nats,
}

/// One run's broker objects: a RabbitMQ queue and a JetStream stream.
struct Dest {
    queue: String,
    stream: String,
    prefix: String,
}

pub(crate) async fn main(env: &Env, quick: bool) -> anyhow::Result<()> {
    let (n, rounds) = if quick { (2_000, 3) } else { (10_000, 5) };
    let sfx = format!("{:08x}", crate::rand_u64() as u32);
    let schema = format!("idem_obxb_{sfx}");
    let admin = sqlx::PgPool::connect(&env.pg_url).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&admin)
        .await?;
    let dest = Dest {
        queue: format!("idem-obxb-{sfx}"),
        stream: format!("IDEM_OBXB_{sfx}"),
        prefix: format!("idem.obxb.{sfx}."),
    };
    let r = run(env, &schema, &dest, n, rounds).await;
    let _ = cleanup(&dest).await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(&admin)
        .await?;
    r
}

async fn run(env: &Env, schema: &str, dest: &Dest, n: usize, rounds: usize) -> anyhow::Result<()> {
    let opts =
        sqlx::postgres::PgConnectOptions::from_str(&env.pg_url)?.options([("search_path", schema)]);
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(8)
        .test_before_acquire(false)
        .connect_with(opts)
        .await?;
    let store = idem::store::sql::SqlStore::postgres(pool.clone());
    store.migrate().await?;
    setup(dest).await?;
    println!(
        "outbox relay benchmark: {n} messages per side and round, batches of {BATCH}, {rounds} rounds, load {:.2}",
        load1()
    );
    for broker in [Broker::Nats, Broker::Rabbit] {
        let mut rates: [Vec<f64>; 3] = Default::default();
        let load0 = load1();
        for round in 0..rounds {
            let mut order = [0, 1, 2];
            order.rotate_left(round % 3);
            for side in order {
                let rate = match side {
                    0 => raw(broker, dest, n).await?,
                    k => relays(broker, dest, &store, &pool, n, k).await?,
                };
                rates[side].push(rate);
            }
        }
        let ratio = |a: usize, b: usize| -> Vec<f64> {
            rates[a].iter().zip(&rates[b]).map(|(x, y)| x / y).collect()
        };
        println!("\n{broker:?} (load {load0:.2} → {:.2})", load1());
        for (i, name) in ["raw publish loop", "relay", "2 relays"].iter().enumerate() {
            println!("  {name:<18} {}", spread(&rates[i], "/s"));
        }
        println!("  relay ÷ raw        {}", spread(&ratio(1, 0), "×"));
        println!("  2 relays ÷ relay   {}", spread(&ratio(2, 1), "×"));
    }
    for wake in [true, false] {
        let lat = crate::outbox_latency::latency(&dest.prefix, &store, &pool, wake).await?;
        println!(
            "\ncommit-to-confirm latency, one message per transaction every 20 ms, NATS, {}: \
             p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} messages)",
            if wake {
                "woken by NOTIFY"
            } else {
                "polling (100 ms doubling to 1 s)"
            },
            pct(&lat, 0.50),
            pct(&lat, 0.99),
            pct(&lat, 1.0),
            lat.len()
        );
    }
    Ok(())
}

fn spread(v: &[f64], unit: &str) -> String {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let med = median(&mut s.clone());
    format!(
        "min {:.2} median {:.2} max {:.2} {unit}",
        s[0],
        med,
        s[s.len() - 1]
    )
}

fn pct(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let i = ((s.len() as f64 - 1.0) * p).round() as usize;
    s[i]
}

async fn setup(dest: &Dest) -> anyhow::Result<()> {
    let js = jetstream::new(async_nats::connect(nats_url()).await?);
    js.create_stream(stream::Config {
        name: dest.stream.clone(),
        subjects: vec![format!("{}>", dest.prefix)],
        ..Default::default()
    })
    .await?;
    let conn = Connection::connect(&amqp_url(), ConnectionProperties::default()).await?;
    let ch = conn.create_channel().await?;
    ch.queue_declare(
        dest.queue.as_str().into(),
        QueueDeclareOptions::default(),
        Default::default(),
    )
    .await?;
    conn.close(200, "bye".into()).await?;
    Ok(())
}

async fn cleanup(dest: &Dest) -> anyhow::Result<()> {
    let js = jetstream::new(async_nats::connect(nats_url()).await?);
    let _ = js.delete_stream(&dest.stream).await;
    let conn = Connection::connect(&amqp_url(), ConnectionProperties::default()).await?;
    let ch = conn.create_channel().await?;
    ch.queue_delete(dest.queue.as_str().into(), QueueDeleteOptions::default())
        .await?;
    conn.close(200, "bye".into()).await?;
    Ok(())
}

/// Empties the destination between sides, so no side pays for another's
/// backlog.
async fn empty(broker: Broker, dest: &Dest) -> anyhow::Result<()> {
    match broker {
        Broker::Nats => {
            let js = jetstream::new(async_nats::connect(nats_url()).await?);
            js.get_stream(&dest.stream).await?.purge().await?;
        }
        Broker::Rabbit => {
            let conn = Connection::connect(&amqp_url(), ConnectionProperties::default()).await?;
            let ch = conn.create_channel().await?;
            ch.queue_purge(dest.queue.as_str().into(), QueuePurgeOptions::default())
                .await?;
            conn.close(200, "bye".into()).await?;
        }
    }
    Ok(())
}

/// Messages per second of a loop publishing `n` messages in confirmed batches.
async fn raw(broker: Broker, dest: &Dest, n: usize) -> anyhow::Result<f64> {
    empty(broker, dest).await?;
    match broker {
        Broker::Nats => {
            let js = jetstream::new(async_nats::connect(nats_url()).await?);
            let subject = format!("{}orders", dest.prefix);
            let t0 = Instant::now();
            for start in (0..n).step_by(BATCH) {
                let mut acks = Vec::with_capacity(BATCH);
                for i in start..(start + BATCH).min(n) {
                    let mut h = async_nats::HeaderMap::new();
                    h.insert(
                        "Nats-Msg-Id",
                        format!("raw-{i}-{}", crate::rand_u64()).as_str(),
                    );
                    h.insert("Idem-Business-Id", format!("o-{i}").as_str());
                    acks.push(
                        js.publish_with_headers(subject.clone(), h, PAYLOAD.into())
                            .await?,
                    );
                }
                for a in acks {
                    a.await?;
                }
            }
            Ok(n as f64 / t0.elapsed().as_secs_f64())
        }
        Broker::Rabbit => {
            let conn = Connection::connect(&amqp_url(), ConnectionProperties::default()).await?;
            let ch = conn.create_channel().await?;
            ch.confirm_select(ConfirmSelectOptions::default()).await?;
            let t0 = Instant::now();
            for start in (0..n).step_by(BATCH) {
                let mut confirms = Vec::with_capacity(BATCH);
                for i in start..(start + BATCH).min(n) {
                    let props = BasicProperties::default()
                        .with_message_id(format!("raw-{i}").into())
                        .with_delivery_mode(2)
                        .with_type("orders".into());
                    let opts = BasicPublishOptions {
                        mandatory: true,
                        ..Default::default()
                    };
                    confirms.push(
                        ch.basic_publish(
                            "".into(),
                            dest.queue.as_str().into(),
                            opts,
                            PAYLOAD,
                            props,
                        )
                        .await?,
                    );
                }
                for c in confirms {
                    anyhow::ensure!(c.await?.is_ack(), "nacked");
                }
            }
            let rate = n as f64 / t0.elapsed().as_secs_f64();
            conn.close(200, "bye".into()).await?;
            Ok(rate)
        }
    }
}

fn publisher(
    broker: Broker,
    dest: &Dest,
    client: Option<async_nats::Client>,
) -> Box<dyn Fn(idem::store::sql::SqlStore, RelayOptions) -> Relay + Send + Sync> {
    let (queue, prefix) = (dest.queue.clone(), dest.prefix.clone());
    let _ = &queue;
    match broker {
        Broker::Nats => {
            let client = client.expect("a NATS client");
            Box::new(move |store, opts| {
                let p = idem::outbox::nats::NatsPublisher::new(client.clone())
                    .subject_prefix(prefix.clone());
                Relay::new(store, p, opts)
            })
        }
        Broker::Rabbit => Box::new(move |store, opts| {
            Relay::new(
                store,
                idem::outbox::amqp::AmqpPublisher::new(amqp_url()),
                opts,
            )
        }),
    }
}

/// `n` pending messages on the broker's topic, written straight into the
/// table (the enqueue is not what is measured).
async fn fill(pool: &sqlx::PgPool, topic: &str, n: usize) -> anyhow::Result<()> {
    sqlx::query("TRUNCATE idem_outbox").execute(pool).await?;
    let tag = crate::rand_u64();
    sqlx::query(
        "INSERT INTO idem_outbox (namespace, id, topic, business_id, order_key, payload, state, \
         attempts, due_at, created_at) \
         SELECT '', 'obx-' || $1 || '-' || g, $2, 'o-' || g, NULL, $3, 0, 0, now(), now() \
         FROM generate_series(1, $4::INT8) g",
    )
    .bind(tag.to_string())
    .bind(topic)
    .bind(PAYLOAD)
    .bind(n as i64)
    .execute(pool)
    .await?;
    Ok(())
}

/// Messages per second of `k` relays draining `n` messages.
async fn relays(
    broker: Broker,
    dest: &Dest,
    store: &idem::store::sql::SqlStore,
    pool: &sqlx::PgPool,
    n: usize,
    k: usize,
) -> anyhow::Result<f64> {
    empty(broker, dest).await?;
    let topic = match broker {
        Broker::Nats => "orders".to_owned(),
        Broker::Rabbit => dest.queue.clone(),
    };
    fill(pool, &topic, n).await?;
    let mut all = Vec::new();
    for i in 0..k {
        let client = match broker {
            Broker::Nats => Some(async_nats::connect(nats_url()).await?),
            Broker::Rabbit => None,
        };
        let mut opts = RelayOptions::new(format!("bench-{i}"));
        opts.batch = BATCH;
        all.push(Arc::new(publisher(broker, dest, client)(
            store.clone(),
            opts,
        )));
    }
    let (stop, signal) = idem::consume::shutdown();
    let t0 = Instant::now();
    let tasks: Vec<_> = all
        .iter()
        .map(|r| {
            let (r, s) = (r.clone(), signal.clone());
            tokio::spawn(async move { r.run(s).await })
        })
        .collect();
    let marked = || -> u64 { all.iter().map(|r| R::get(&r.counters().marked)).sum() };
    while marked() < n as u64 {
        anyhow::ensure!(t0.elapsed() < Duration::from_secs(300), "relay stalled");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let rate = n as f64 / t0.elapsed().as_secs_f64();
    stop.trigger();
    for t in tasks {
        t.await?;
    }
    Ok(rate)
}
