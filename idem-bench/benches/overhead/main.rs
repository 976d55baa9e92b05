//! The guard's overhead against the same round trips written by hand, side by side
//! in one run against the live services.
//!
//! ```text
//! cargo bench -p idem-bench --bench overhead -- [--quick] [--cluster] [--out FILE] [--only TEXT]
//! cargo bench -p idem-bench --bench overhead -- --burst [--quick]
//! cargo bench -p idem-bench --bench overhead -- --outbox [--quick]
//! cargo bench -p idem-bench --bench overhead -- --batch-consume [--quick]
//! ```
//! `--burst` runs the flash-sale burst rows instead (see `burst.rs`), `--outbox`
//! the outbox relay against a raw publish loop (see `outbox_relay.rs`),
//! `--batch-consume` the batched consume-once rows (see `consume_batch.rs`).
//! Services (override with the environment): `IDEM_BENCH_REDIS` (redis://127.0.0.1:6379),
//! `IDEM_BENCH_PG` (postgres://postgres@127.0.0.1/test), `IDEM_BENCH_MYSQL`
//! (mysql://root@127.0.0.1/test), `IDEM_BENCH_AMQP` (amqp://guest:guest@127.0.0.1:5672/%2f),
//! `IDEM_BENCH_NATS` (nats://127.0.0.1:4222). A service that does not answer fails the run.
//!
//! Each scenario has sides: A (through idem), B (the hand-written equivalent with
//! the same round trips) and sometimes C (shown for comparison). Batches alternate
//! A B B A … so machine noise hits every side; the ratio is the median over batch
//! pairs of A's cost per call over B's. See BENCHMARKS.md for how to read it.

mod burst;
mod cluster;
mod consume;
mod consume_amqp;
mod consume_batch;
mod consume_batch_hand;
mod consume_nats;
mod count;
mod harness;
mod http;
mod lock;
mod macro_rows;
mod memory;
mod outbox_latency;
mod outbox_relay;
mod peers;
mod redis;
mod redis_memory;
mod replicated;
mod run_facts;
mod scenarios;
mod sql;
mod sqlstore;
mod state_cas;
mod table;
mod token;
mod transition;
mod txguard;
mod workers;

use std::io::Write as _;
use std::time::Duration;

use serde::Serialize;

use harness::{Plan, Side};
use scenarios::{Kind, Scenario, Target, scenarios};

/// Connection settings and the run's namespace (shared with the workers).
#[derive(Debug, Clone)]
pub(crate) struct Env {
    pub(crate) redis_url: String,
    pub(crate) pg_url: String,
    pub(crate) mysql_url: String,
    /// Namespace of every key and name of this run (random).
    pub(crate) ns: String,
    /// Distinguishes the keys of concurrent worker processes.
    pub(crate) tag: String,
    /// Seed URLs of the cluster the benchmark started (`--cluster`).
    pub(crate) cluster: Option<Vec<String>>,
}

/// Builds a scenario's sides; keys carry the scenario id so no two scenarios
/// (or worker processes) share first-call keys.
async fn build_sides(env: &Env, s: &Scenario) -> anyhow::Result<Vec<Side>> {
    let env = &Env {
        tag: format!("{}{}", env.tag, s.id),
        ..env.clone()
    };
    match s.kind {
        Kind::RedisDuplicate => redis::duplicate(env).await,
        Kind::RedisFirst => redis::first(env).await,
        Kind::RedisWaitDuplicate => replicated::duplicate(env).await,
        Kind::RedisWaitFirst => replicated::first(env).await,
        Kind::ClusterDuplicate => cluster::duplicate(env).await,
        Kind::ClusterFirst => cluster::first(env).await,
        Kind::MemoryDuplicate => memory::duplicate(env).await,
        Kind::MemoryFirst => memory::first(env).await,
        Kind::Backstop(db) => sql::backstop(env, db).await,
        Kind::SqlDuplicate(db) => sqlstore::duplicate(env, db).await,
        Kind::SqlFirst(db) => sqlstore::first(env, db).await,
        Kind::HttpDuplicate => http::duplicate(env).await,
        Kind::HttpFirst => http::first(env).await,
        Kind::Lock => lock::acquire_release(env, false).await,
        Kind::LockFenced => lock::acquire_release(env, true).await,
        Kind::Token => token::issue_consume(env).await,
        Kind::StateCas => state_cas::apply(env).await,
        Kind::Transition => transition::transition(env).await,
        Kind::TxGuard => txguard::first(env).await,
        Kind::ConsumeAmqp => consume_amqp::sides(env).await,
        Kind::ConsumeNats => consume_nats::sides(env).await,
        Kind::Macro(on, replay) => macro_rows::row(env, on, replay).await,
    }
}

#[derive(Debug, Serialize)]
pub(crate) struct ScenarioResult {
    id: String,
    pub(crate) title: String,
    pub(crate) concurrency: usize,
    pub(crate) procs: usize,
    pub(crate) sides: Vec<harness::SideSummary>,
    /// Median per-batch cost ratio of A over each side (1.0 for A itself).
    pub(crate) ratios: Vec<f64>,
    /// (side, target, met).
    pub(crate) targets: Vec<(usize, Target, bool)>,
    /// Per side over `harness::REPEATS` repeats: calls/s, A's cost ratio.
    pub(crate) repeats: Vec<(harness::Spread, Option<harness::Spread>)>,
    /// The 1-minute load average at the scenario's start and end.
    pub(crate) load: [f64; 2],
}

struct Args {
    quick: bool,
    burst: bool,
    outbox: bool,
    batch_consume: bool,
    out: String,
    only: Option<String>,
    worker: Option<String>,
    ns: Option<String>,
    /// Keep only this side (0 = A): for profiling one side under `perf`.
    side: Option<usize>,
    /// `--count SIDE` (`macro_rows::count`), or `--count ID --side N` (`count::side`).
    count: Option<String>,
    /// Start a three-master Redis Cluster and run the cluster rows on it.
    cluster: bool,
    tag: String,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut a = Args {
        quick: false,
        burst: false,
        outbox: false,
        batch_consume: false,
        out: "target/bench/overhead.json".into(),
        only: None,
        worker: None,
        ns: None,
        side: None,
        count: None,
        cluster: false,
        tag: "p0".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut val = || {
            it.next()
                .ok_or_else(|| anyhow::anyhow!("{x} needs a value"))
        };
        match x.as_str() {
            "--quick" => a.quick = true,
            "--burst" => a.burst = true,
            "--outbox" => a.outbox = true,
            "--batch-consume" => a.batch_consume = true,
            "--cluster" => a.cluster = true,
            "--out" => a.out = val()?,
            "--only" => a.only = Some(val()?),
            "--worker" => a.worker = Some(val()?),
            "--ns" => a.ns = Some(val()?),
            "--tag" => a.tag = val()?,
            "--side" => a.side = Some(val()?.parse()?),
            "--count" => a.count = Some(val()?),
            // cargo bench passes `--bench` to harness-less targets.
            "--bench" => {}
            other => anyhow::bail!(
                "unknown argument `{other}`; expected --quick, --burst, --outbox, --batch-consume, --cluster, --out FILE, --only TEXT, --side N, --count ID"
            ),
        }
    }
    Ok(a)
}

fn env_or(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_owned())
}

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    if let (Some(what), None) = (&args.count, args.side) {
        return macro_rows::count(what);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Killed on drop, at the end of the run.
    let cluster = if args.cluster && args.worker.is_none() {
        Some(cluster::Cluster::start()?)
    } else {
        None
    };
    let env = Env {
        cluster: cluster.as_ref().map(cluster::Cluster::urls),
        redis_url: env_or("IDEM_BENCH_REDIS", "redis://127.0.0.1:6379"),
        pg_url: env_or("IDEM_BENCH_PG", "postgres://postgres@127.0.0.1/test"),
        mysql_url: env_or("IDEM_BENCH_MYSQL", "mysql://root@127.0.0.1/test"),
        ns: args
            .ns
            .clone()
            .unwrap_or_else(|| format!("bench{:08x}", rand_u64() as u32)),
        tag: args.tag.clone(),
    };
    let plan = if args.quick {
        Plan {
            budget: Duration::from_millis(1500),
            batch: Duration::from_millis(15),
            min_rounds: 10,
        }
    } else {
        Plan {
            budget: Duration::from_secs(8),
            batch: Duration::from_millis(40),
            min_rounds: 30,
        }
    };
    if let (Some(id), Some(side)) = (&args.count, args.side) {
        return count::side(&env, id, side);
    }
    if let Some(id) = &args.worker {
        return rt.block_on(worker(&env, id, plan));
    }
    if args.burst {
        return rt.block_on(burst::main(&env, args.quick));
    }
    if args.outbox {
        return rt.block_on(outbox_relay::main(&env, args.quick));
    }
    if args.batch_consume {
        return rt.block_on(consume_batch::main(&env, args.quick));
    }
    rt.block_on(run(&env, &args, plan))
}

/// A worker process: measures one scenario and prints its raw runs as JSON.
async fn worker(env: &Env, id: &str, plan: Plan) -> anyhow::Result<()> {
    let s = scenarios()
        .into_iter()
        .find(|s| s.id == id)
        .ok_or_else(|| anyhow::anyhow!("no scenario `{id}`"))?;
    let sides = build_sides(env, &s).await?;
    let runs = harness::measure(&sides, s.concurrency, plan).await?;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &runs)?;
    out.flush()?;
    Ok(())
}

async fn run(env: &Env, args: &Args, plan: Plan) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    println!(
        "idem overhead benchmark — namespace {} — {} mode",
        env.ns,
        if args.quick { "quick" } else { "full" }
    );
    let load_before = loadavg();
    let commit = run_facts::commit();
    // Clean up whatever happened: the services are shared.
    let measured = measure_all(env, args, plan).await;
    let cleaned = cleanup(env).await;
    let (results, memory) = measured?;
    cleaned?;
    let load_after = loadavg();
    table::print_table(&results, &memory);
    println!(
        "\nload average (1, 5, 15 min) before: {load_before}; after: {load_after}; commit {commit}"
    );
    let doc = serde_json::json!({
        "mode": if args.quick { "quick" } else { "full" },
        "seconds": started.elapsed().as_secs_f64(),
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "commit": commit,
        "scenarios": results,
        "redis_memory": memory,
    });
    if let Some(dir) = std::path::Path::new(&args.out).parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&args.out, serde_json::to_vec_pretty(&doc)?)?;
    println!(
        "\nwrote {} ({:.0} s)",
        args.out,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

async fn measure_all(
    env: &Env,
    args: &Args,
    plan: Plan,
) -> anyhow::Result<(Vec<ScenarioResult>, redis_memory::MemoryReport)> {
    redis::prepare(env).await?;
    let mut results = Vec::new();
    for s in scenarios() {
        if args.only.as_deref().is_some_and(|o| !s.id.contains(o)) {
            continue;
        }
        if matches!(
            s.kind,
            Kind::ClusterDuplicate | Kind::ClusterFirst | Kind::Macro(macro_rows::On::Cluster, _)
        ) && env.cluster.is_none()
        {
            continue;
        }
        eprint!("{:<28} ", s.id);
        let load0 = run_facts::load1();
        let (runs, pairs, repeats) = if s.procs > 1 {
            let per_proc = workers::spawn_workers(env, &s, args.quick).await?;
            let mut pairs: Vec<Vec<f64>> = vec![Vec::new(); per_proc[0].len()];
            for runs in &per_proc {
                for (i, r) in runs.iter().enumerate().skip(1) {
                    pairs[i].extend(harness::pair_ratios(&runs[0], r));
                }
            }
            let repeats = harness::repeats(&per_proc);
            (harness::merge_procs(per_proc), pairs, repeats)
        } else {
            let mut sides = build_sides(env, &s).await?;
            if let Some(keep) = args.side {
                // Profiling one side: ratios are meaningless (NaN) in this mode.
                sides = sides.into_iter().skip(keep).take(1).collect();
            }
            let runs = harness::measure(&sides, s.concurrency, plan).await?;
            let pairs = (0..runs.len())
                .map(|i| {
                    if i == 0 {
                        Vec::new()
                    } else {
                        harness::pair_ratios(&runs[0], &runs[i])
                    }
                })
                .collect();
            let repeats = harness::repeats(std::slice::from_ref(&runs));
            (runs, pairs, repeats)
        };
        let mut pairs = pairs;
        let ratios: Vec<f64> = pairs
            .iter_mut()
            .enumerate()
            .map(|(i, p)| if i == 0 { 1.0 } else { harness::median(p) })
            .collect();
        let targets = s
            .targets
            .iter()
            .filter(|(i, _)| *i < ratios.len())
            .map(|&(i, t)| (i, t, t.met(ratios[i])))
            .collect();
        let r = ScenarioResult {
            id: s.id.clone(),
            title: s.title.clone(),
            concurrency: s.concurrency,
            procs: s.procs,
            sides: harness::summarize(&runs),
            ratios,
            targets,
            repeats,
            load: [load0, run_facts::load1()],
        };
        let shown: Vec<String> = r.ratios.iter().skip(1).map(|x| format!("{x:.3}")).collect();
        eprintln!("cost A/others {}", shown.join(" "));
        results.push(r);
    }
    let memory = redis_memory::memory_usage(env).await?;
    Ok((results, memory))
}

async fn cleanup(env: &Env) -> anyhow::Result<()> {
    redis::cleanup(env).await?;
    sql::cleanup(env).await?;
    transition::cleanup(env).await?;
    consume::cleanup(env).await?;
    macro_rows::cleanup(env).await?;
    sqlstore::cleanup(env).await
}

/// The machine's load average, to tell a quiet run from a busy one.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// A random u64 (per-process seed material).
pub(crate) fn rand_u64() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0
}
