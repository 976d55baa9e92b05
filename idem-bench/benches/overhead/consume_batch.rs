//! Batched consume-once at batch 100 (RabbitMQ → PostgreSQL) against the
//! consumers users would write by hand. Each side drains the same number of
//! messages, published to its own queue before its consumer starts; a round
//! is timed from the consumer's start (connection included, the same for
//! every side) to the commit of the last message. Every message's effect is
//! one row inserted in the consumer's transaction.
//!
//! - A: `idem::consume::amqp::run_batch` with a `Batch` of 100 (4 batches
//!   in flight, prefetch 400; `IDEM_BENCH_BATCH_IN_FLIGHT` sets another
//!   count for both batch sides): per batch `BEGIN`, the log's one batch insert
//!   (message and business id of every record), the 100 effect inserts,
//!   `COMMIT`, then the acks;
//! - B: the same batch consumer by hand, without dedupe: the same lapin
//!   loop, batch size, linger, prefetch and batches in flight; `BEGIN`, the
//!   100 effect inserts, `COMMIT`, acks;
//! - C: an at-least-once consumer by hand committing one message per
//!   transaction, without dedupe (the per-message rows' floor: prefetch 64,
//!   32 handlers): `BEGIN`, the effect insert, `COMMIT`, ack.
//!
//! - D: B plus the log's batch insert written by hand (the statement text
//!   idem runs): A's floor, so A ÷ D is what idem adds beyond its SQL.
//!
//! Targets: A ≥ 2× C's rate; A's cost ≤ 1.15× B's. Rounds alternate the
//! order (A B C D, D C B A, …); reported per side: messages/s min, median and
//! max over rounds, and A's cost ratio to each side per round.
//!
//! ```text
//! cargo bench -p idem-bench --bench overhead -- --batch-consume [--quick]
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use idem::consume::{Batch, BatchHandler, ConsumerOptions, Delivery, Record, shutdown};
use lapin::options::{BasicPublishOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use sqlx::{AssertSqlSafe, PgPool};
use tokio::sync::{Notify, watch};

use crate::Env;
use crate::consume::{CONCURRENCY, Created, amqp_url};
use crate::consume_batch_hand::{Hand, effect};
use crate::sql::{Db, Pool};

pub(crate) const BATCH: usize = 100;
/// How long a batch waits to fill (both batch sides).
pub(crate) const LINGER: Duration = Duration::from_millis(10);
const LOG: &str = "idem_bench_batch_log";
const EFFECTS: &str = "idem_bench_batch_effects";
const SIDES: [&str; 4] = [
    "A idem amqp::run_batch, batch 100 (dedupe)",
    "B the same batch loop by hand, no dedupe",
    "C by hand, one message per transaction, no dedupe",
    "D B + A's log statement by hand (A's floor)",
];

/// Batches in flight on both batch sides: 4, or `IDEM_BENCH_BATCH_IN_FLIGHT`.
pub(crate) fn in_flight() -> usize {
    crate::env_or("IDEM_BENCH_BATCH_IN_FLIGHT", "4")
        .parse()
        .unwrap_or(4)
}

/// Messages committed so far in a round.
#[derive(Default)]
pub(crate) struct Committed {
    n: AtomicUsize,
    wake: Notify,
}

impl Committed {
    pub(crate) fn add(&self, n: usize) {
        self.n.fetch_add(n, Ordering::SeqCst);
        self.wake.notify_one();
    }

    async fn reach(&self, m: usize) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while self.n.load(Ordering::SeqCst) < m {
            let woke = tokio::time::timeout_at(deadline, self.wake.notified()).await;
            anyhow::ensure!(woke.is_ok(), "{m} messages not committed within 120 s");
        }
        Ok(())
    }
}

/// What every side works with.
#[derive(Clone)]
pub(crate) struct Bench {
    pub(crate) pg: PgPool,
    pub(crate) idem: idem::Idem,
    pub(crate) insert: Arc<str>,
    /// D's log statement: the text idem runs on PostgreSQL.
    pub(crate) log: Arc<str>,
}

/// A's handler: the effect row, with the message's ids in the log.
struct Effects {
    insert: Arc<str>,
    committed: Arc<Committed>,
}

impl BatchHandler for Effects {
    type Db = sqlx::Postgres;
    type Msg = String;
    type Error = String;

    fn parse(&self, d: &Delivery) -> Result<Record<String>, String> {
        let id = d.id.clone().ok_or("a message without an id")?;
        Ok(Record::new(id.clone(), id.clone()).business("bench", id))
    }

    async fn handle(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
        id: &String,
    ) -> Result<(), String> {
        effect(&self.insert, tx, id).await
    }

    fn after_commit(&self, applied: &[&String]) {
        self.committed.add(applied.len());
    }
}

/// Runs the batch consume rows and prints them.
pub(crate) async fn main(env: &Env, quick: bool) -> anyhow::Result<()> {
    let (messages, rounds) = if quick { (2_000, 5) } else { (5_000, 12) };
    let Pool::Pg(pg) = Pool::connect(env, Db::Postgres, CONCURRENCY as u32 + 4).await? else {
        anyhow::bail!("expected a PostgreSQL pool")
    };
    let pool = Pool::Pg(pg.clone());
    for s in idem::consume::ddl(idem::db::Dialect::Postgres, LOG)? {
        pool.exec(&s).await?;
    }
    pool.exec(&format!(
        "CREATE TABLE IF NOT EXISTS {EFFECTS} (msg_id TEXT NOT NULL)"
    ))
    .await?;
    let bench = Bench {
        pg,
        idem: idem::Idem::builder()
            .store(idem::MemoryStore::new())
            .namespace(env.ns.clone())
            .build()?,
        insert: format!("INSERT INTO {EFFECTS} (msg_id) VALUES ($1)").into(),
        log: format!(
            "INSERT INTO {LOG} (msg_key, biz_key, consumed_at, expires_at) SELECT m, b, \
             statement_timestamp(), statement_timestamp() + ($3::INT8 * INTERVAL '1 microsecond') \
             FROM unnest($1::TEXT[], $2::TEXT[]) AS u(m, b) ON CONFLICT DO NOTHING RETURNING msg_key"
        )
        .into(),
    };
    let conn = Connection::connect(&amqp_url(), ConnectionProperties::default()).await?;
    let ch = conn.create_channel().await?;
    let queues: Vec<String> = (0..SIDES.len())
        .map(|s| format!("idem-bench-batch-{}-{s}", env.ns))
        .collect();
    let load_before = crate::loadavg();
    let measured = rounds_of(&bench, &ch, &queues, messages, rounds, &pool).await;
    let load_after = crate::loadavg();
    let created: Vec<Created> = queues.into_iter().map(Created::Queue).collect();
    let cleaned = crate::consume_amqp::delete(&created).await;
    pool.exec(&format!("DROP TABLE IF EXISTS {LOG}, {EFFECTS}"))
        .await?;
    let _ = conn.close(200, "bench done".into()).await;
    let rates = measured?;
    cleaned?;
    print(&rates, messages);
    println!(
        "\nload average (1, 5, 15 min) before: {load_before}; after: {load_after}; commit {}",
        crate::run_facts::commit()
    );
    Ok(())
}

/// Per side, its rate (messages/s) in each round.
async fn rounds_of(
    bench: &Bench,
    ch: &Channel,
    queues: &[String],
    messages: usize,
    rounds: usize,
    pool: &Pool,
) -> anyhow::Result<Vec<Vec<f64>>> {
    for q in queues {
        let opts = QueueDeclareOptions::default();
        ch.queue_declare(q.as_str().into(), opts, FieldTable::default())
            .await?;
    }
    let mut rates = vec![Vec::new(); SIDES.len()];
    for round in 0..rounds {
        let mut order: Vec<usize> = (0..SIDES.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for side in order {
            let q = &queues[side];
            for i in 0..messages {
                let id = format!("{side}-{round}-{i}");
                let props = BasicProperties::default().with_message_id(id.as_str().into());
                let opts = BasicPublishOptions::default();
                ch.basic_publish("".into(), q.as_str().into(), opts, b"{}", props)
                    .await?;
            }
            while depth(ch, q).await? < messages as u32 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let secs = drain(bench, side, q, messages).await?;
            anyhow::ensure!(depth(ch, q).await? == 0, "{}: messages left", SIDES[side]);
            let sql = AssertSqlSafe(format!("SELECT COUNT(*) FROM {EFFECTS}"));
            let n: i64 = sqlx::query_scalar(sql).fetch_one(&bench.pg).await?;
            anyhow::ensure!(n == messages as i64, "{}: {n} effects", SIDES[side]);
            pool.exec(&format!("TRUNCATE {EFFECTS}")).await?;
            rates[side].push(messages as f64 / secs);
            eprint!(".");
        }
    }
    eprintln!();
    Ok(rates)
}

/// Starts `side`'s consumer on `queue`, waits for `m` commits, stops it
/// (its acks sent); the seconds from its start to the last commit.
async fn drain(bench: &Bench, side: usize, queue: &str, m: usize) -> anyhow::Result<f64> {
    let committed = Arc::new(Committed::default());
    let mut retried = None;
    let t0 = Instant::now();
    let (stop, run): (
        Box<dyn FnOnce() + Send>,
        tokio::task::JoinHandle<anyhow::Result<()>>,
    ) = if side == 0 {
        let handler = Effects {
            insert: bench.insert.clone(),
            committed: committed.clone(),
        };
        let batch = Batch::new(bench.pg.clone(), "bench-batch", handler)
            .size(BATCH)
            .linger(LINGER)
            .handle(bench.idem.clone());
        let mut opts = ConsumerOptions::new("bench-batch");
        opts.prefetch = (BATCH * in_flight()) as u16;
        opts.concurrency = in_flight();
        opts.on_poison = Some(Arc::new(|p: &idem::consume::Poisoned| {
            eprintln!(
                "bench A: message {:?} given up on: {}",
                p.delivery.id, p.error
            );
        }));
        retried = Some(opts.counters.clone());
        let (stop, signal) = shutdown();
        let q = queue.to_owned();
        let run = tokio::spawn(async move {
            idem::consume::amqp::run_batch(&amqp_url(), &q, opts, signal, batch).await;
            Ok(())
        });
        (Box::new(move || stop.trigger()), run)
    } else {
        let (tx, rx) = watch::channel(false);
        let hand = Hand {
            bench: bench.clone(),
            committed: committed.clone(),
            batch: if side == 2 { 1 } else { BATCH },
            log: side == 3,
        };
        let run = tokio::spawn(hand.run(queue.to_owned(), rx));
        (Box::new(move || _ = tx.send(true)), run)
    };
    let mut run = run;
    tokio::select! {
        r = committed.reach(m) => r.map_err(|e| e.context(format!("{}: {retried:?}", SIDES[side])))?,
        r = &mut run => {
            let n = committed.n.load(Ordering::SeqCst);
            r??;
            anyhow::bail!("{}: the consumer ended after {n} of {m} commits", SIDES[side]);
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    stop();
    run.await?.map_err(|e| e.context(SIDES[side]))?;
    Ok(secs)
}

async fn depth(ch: &Channel, queue: &str) -> anyhow::Result<u32> {
    let opts = QueueDeclareOptions {
        passive: true,
        ..Default::default()
    };
    let q = ch
        .queue_declare(queue.into(), opts, FieldTable::default())
        .await?;
    Ok(q.message_count())
}

/// The rows: each side's rate over rounds, and A's cost ratio to it (per
/// round: A's cost per message over the side's).
fn print(rates: &[Vec<f64>], messages: usize) {
    let spread = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let median = crate::harness::median(&mut v);
        (v[0], median, v[v.len() - 1])
    };
    println!(
        "\nbatched consume-once, RabbitMQ → PostgreSQL, batch {BATCH}: {messages} messages per round, {} rounds\n",
        rates[0].len()
    );
    println!(
        "| side | msg/s min | median | max | A's cost ÷ side's (min / median / max) | target |"
    );
    println!("|---|---:|---:|---:|---|---|");
    for (s, r) in rates.iter().enumerate() {
        let (lo, mid, hi) = spread(r.clone());
        let ratio: Vec<f64> = rates[0].iter().zip(r).map(|(a, x)| x / a).collect();
        let (rlo, rmid, rhi) = spread(ratio);
        let target = match s {
            1 => format!(
                "cost ≤ 1.15× ({})",
                if rmid <= 1.15 { "met" } else { "NOT met" }
            ),
            2 => format!("thr ≥ 2× ({})", if rmid <= 0.5 { "met" } else { "NOT met" }),
            _ => String::new(),
        };
        println!(
            "| {} | {lo:.0} | {mid:.0} | {hi:.0} | {rlo:.3} / {rmid:.3} / {rhi:.3} | {target} |",
            SIDES[s]
        );
    }
}
