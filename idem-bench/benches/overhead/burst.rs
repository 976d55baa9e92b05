//! Flash-sale bursts (issue 20): N simultaneous callers over K keys start behind
//! one barrier, each key's first caller runs a 10 ms body and the others are
//! duplicates. Reported per row: time until the last caller is done, the p99 of
//! the callers' latencies, errors by kind, and executions per key (min–max; one
//! is right). Beside idem on `RedisStore` (several pool settings, and a queue
//! too large to ever wait: the accounting before issue 20), the native floor is
//! driven the same way: the same callers by hand on one multiplexed redis-rs
//! connection (`SET k P NX PX lease GET`; the holder writes `D<value>`;
//! duplicates that find `P` poll `GET` every 2 ms).
//!
//! ```text
//! cargo bench -p idem-bench --bench overhead -- --burst [--quick]
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use idem::store::redis::{RedisStore, redis};
use tokio::sync::Barrier;

use crate::Env;

/// The body's duration: a flash sale's order insert, roughly.
const BODY: Duration = Duration::from_millis(10);
/// The lease of a claim, and the native side's in-progress marker.
const LEASE: Duration = Duration::from_secs(30);
/// Stored results live this long (the run deletes them anyway).
const TTL: Duration = Duration::from_secs(120);

/// One way of serving the burst.
#[derive(Debug, Clone, Copy)]
enum Side {
    /// idem on a `RedisStore` with `connections` × `in_flight`.
    Idem {
        connections: usize,
        in_flight: usize,
    },
    /// The same callers by hand on one multiplexed connection.
    Native,
}

impl Side {
    fn name(self) -> String {
        match self {
            Side::Idem {
                connections,
                in_flight,
            } if in_flight >= 1 << 20 => format!("idem, {connections} conn, no queue (before)"),
            Side::Idem {
                connections,
                in_flight,
            } => format!("idem, {connections} conn × {in_flight} in flight"),
            Side::Native => "native floor (redis-rs by hand)".into(),
        }
    }
}

/// What one burst did.
struct Row {
    side: String,
    callers: usize,
    keys: usize,
    total: Duration,
    p50: Duration,
    p99: Duration,
    errors: BTreeMap<String, usize>,
    runs: (u32, u32),
}

/// Runs the burst rows and prints them as a Markdown table.
pub(crate) async fn main(env: &Env, quick: bool) -> anyhow::Result<()> {
    let sides = [
        Side::Native,
        Side::Idem {
            connections: 2,
            in_flight: idem::store::redis::DEFAULT_IN_FLIGHT,
        },
        Side::Idem {
            connections: 1,
            in_flight: idem::store::redis::DEFAULT_IN_FLIGHT,
        },
        Side::Idem {
            connections: 4,
            in_flight: 32,
        },
        Side::Idem {
            connections: 1,
            in_flight: 1 << 20,
        },
    ];
    let sizes = [(1_000, 100), (10_000, 100), (10_000, 1_000)];
    let reps = if quick { 1 } else { 3 };
    println!(
        "flash-sale bursts — namespace {} — {reps} run(s) per row, median shown",
        env.ns
    );
    println!();
    println!(
        "| callers | keys | duplicates | side | done in ms | p50 ms | p99 ms | errors | executions per key |"
    );
    println!("|---:|---:|---:|---|---:|---:|---:|---|---|");
    for (callers, keys) in sizes {
        for side in sides {
            let mut rows = Vec::new();
            for rep in 0..reps {
                let tag = format!(
                    "{}-{callers}-{keys}-{rep}-{}",
                    env.ns,
                    crate::rand_u64() as u32
                );
                rows.push(burst(env, side, callers, keys, &tag).await?);
            }
            rows.sort_by_key(|r| r.total);
            print_row(&rows[rows.len() / 2]);
        }
    }
    Ok(())
}

fn print_row(r: &Row) {
    let errors = if r.errors.is_empty() {
        "0".to_owned()
    } else {
        r.errors
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "| {} | {} | {:.0}% | {} | {:.0} | {:.1} | {:.1} | {errors} | {}–{} |",
        r.callers,
        r.keys,
        100.0 * (r.callers - r.keys) as f64 / r.callers as f64,
        r.side,
        ms(r.total),
        ms(r.p50),
        ms(r.p99),
        r.runs.0,
        r.runs.1
    );
}

/// `callers` tasks over `keys` keys behind one barrier.
async fn burst(
    env: &Env,
    side: Side,
    callers: usize,
    keys: usize,
    tag: &str,
) -> anyhow::Result<Row> {
    let runs: Arc<Vec<AtomicU32>> = Arc::new((0..keys).map(|_| AtomicU32::new(0)).collect());
    let barrier = Arc::new(Barrier::new(callers + 1));
    let mut tasks = tokio::task::JoinSet::new();
    let prefix = format!("idem-bench:burst:{tag}:");
    let con = redis::Client::open(env.redis_url.as_str())?
        .get_multiplexed_async_connection()
        .await?;
    let idem = match side {
        Side::Idem {
            connections,
            in_flight,
        } => {
            let store = RedisStore::builder(&env.redis_url)
                .prefix(prefix.clone())
                .connections(connections)
                .max_in_flight(in_flight)
                .connect()
                .await?;
            Some(idem::Idem::builder().store(store).namespace("b").build()?)
        }
        Side::Native => None,
    };
    for i in 0..callers {
        let k = i % keys;
        let (barrier, runs, idem, mut con) =
            (barrier.clone(), runs.clone(), idem.clone(), con.clone());
        let key = format!("{prefix}n:{k}");
        tasks.spawn(async move {
            barrier.wait().await;
            let t0 = Instant::now();
            let body = || async {
                runs[k].fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(BODY).await;
                k
            };
            let r = match idem {
                Some(idem) => idem
                    .guard("sale", &[&k])
                    .lease(LEASE)
                    .ttl(TTL)
                    .run(|| async { Ok::<_, idem::Error>(body().await) })
                    .await
                    .map(|o| o.into_inner())
                    .map_err(|e| kind(&e)),
                None => native(&mut con, &key, body).await,
            };
            (
                t0.elapsed(),
                r.and_then(|v| {
                    if v == k {
                        Ok(())
                    } else {
                        Err("wrong value".into())
                    }
                }),
            )
        });
    }
    barrier.wait().await;
    let started = Instant::now();
    let mut lat = Vec::with_capacity(callers);
    let mut errors = BTreeMap::new();
    while let Some(j) = tasks.join_next().await {
        let (d, r) = j?;
        lat.push(d);
        if let Err(e) = r {
            *errors.entry(e).or_insert(0) += 1;
        }
    }
    let total = started.elapsed();
    lat.sort();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    let counts: Vec<u32> = runs.iter().map(|r| r.load(Ordering::Relaxed)).collect();
    cleanup(con, &prefix, keys).await?;
    Ok(Row {
        side: side.name(),
        callers,
        keys,
        total,
        p50: pct(0.50),
        p99: pct(0.99),
        errors,
        runs: (
            counts.iter().copied().min().unwrap_or(0),
            counts.iter().copied().max().unwrap_or(0),
        ),
    })
}

/// The error's kind, for the table.
fn kind(e: &idem::Error) -> String {
    let d = format!("{e:?}");
    d.split([' ', '{', '(']).next().unwrap_or("?").to_owned()
}

/// One caller by hand: claim with `SET NX GET`, run and store, or poll for the
/// holder's value.
async fn native<F, Fut>(
    con: &mut redis::aio::MultiplexedConnection,
    key: &str,
    body: F,
) -> Result<usize, String>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = usize>,
{
    let err = |e: redis::RedisError| {
        if e.is_timeout() {
            "timeout".to_owned()
        } else {
            format!("redis {:?}", e.kind())
        }
    };
    let prev: Option<String> = redis::cmd("SET")
        .arg(key)
        .arg("P")
        .arg("NX")
        .arg("PX")
        .arg(LEASE.as_millis() as u64)
        .arg("GET")
        .query_async(con)
        .await
        .map_err(err)?;
    let mut seen = match prev {
        None => {
            let v = body().await;
            let _: () = redis::cmd("SET")
                .arg(key)
                .arg(format!("D{v}"))
                .arg("PX")
                .arg(TTL.as_millis() as u64)
                .query_async(con)
                .await
                .map_err(err)?;
            return Ok(v);
        }
        Some(s) => s,
    };
    loop {
        if let Some(v) = seen.strip_prefix('D') {
            return v.parse().map_err(|_| "bad value".to_owned());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
        let got: Option<String> = redis::cmd("GET")
            .arg(key)
            .query_async(con)
            .await
            .map_err(err)?;
        seen = got.ok_or_else(|| "marker lost".to_owned())?;
    }
}

/// Deletes the run's keys (idem's records and the native markers).
async fn cleanup(
    mut con: redis::aio::MultiplexedConnection,
    prefix: &str,
    keys: usize,
) -> anyhow::Result<()> {
    for chunk in (0..keys).collect::<Vec<_>>().chunks(200) {
        let mut cmd = redis::cmd("UNLINK");
        for k in chunk {
            cmd.arg(format!("{prefix}n:{k}"))
                .arg(format!("{prefix}{{b:sale:{k}}}"));
        }
        let _: i64 = cmd.query_async(&mut con).await?;
    }
    Ok(())
}
