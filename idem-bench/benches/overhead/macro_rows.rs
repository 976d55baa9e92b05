//! `#[idempotent]`, the API the README leads with, beside the guard for the
//! same call on the same handle: A is the macro, B `idem.guard(..).run`, C the
//! macro with `fingerprint = [cmd]` (what the macro may do and the guard need
//! not, priced on its own). Duplicates replay records the set-up finished
//! through the same side; first calls use fresh keys. Each function has its
//! own scene (two functions, or a function and a non-macro scene, cannot
//! share one).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use idem::{Error, Idem, MemoryStore};
use serde::Serialize;

use crate::Env;
use crate::harness::{Op, op};
use crate::redis::{self, result, sides};
use crate::sql::Db;

/// Records replayed by the duplicate rows (per side).
const DUP_KEYS: u64 = 200;
/// The part of every duplicate key (shared by the c=1 and c=64 rows).
const DUP: &str = "dup";

/// The store a row runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum On {
    Memory,
    Redis,
    Cluster,
    Postgres,
}

impl On {
    pub(crate) fn id(self) -> &'static str {
        match self {
            On::Memory => "memory",
            On::Redis => "redis",
            On::Cluster => "cluster",
            On::Postgres => "pg",
        }
    }
    pub(crate) fn name(self) -> &'static str {
        match self {
            On::Memory => "memory",
            On::Redis => "Redis",
            On::Cluster => "Redis Cluster",
            On::Postgres => "PostgreSQL",
        }
    }
}

/// A request payload of the usual size, for the fingerprint row.
#[derive(Debug, Serialize)]
pub(crate) struct Cmd {
    sku: &'static str,
    qty: u32,
    price_cents: u64,
    note: &'static str,
}

const CMD: Cmd = Cmd {
    sku: "SKU-000123-RED-XL",
    qty: 3,
    price_cents: 12_999,
    note: "leave at the door",
};

#[idem::idempotent(key = "m-dup:<part>:<k>", lease = "5s", ttl = "1h", handle = idem)]
async fn dup(idem: &Idem, part: &str, k: u64) -> Result<String, Error> {
    Ok(result())
}

#[idem::idempotent(key = "m-dup-fp:<part>:<k>", lease = "5s", ttl = "1h", handle = idem, fingerprint = [cmd])]
async fn dup_fp(idem: &Idem, part: &str, k: u64, cmd: &Cmd) -> Result<String, Error> {
    Ok(result())
}

#[idem::idempotent(key = "m-first:<part>:<k>", lease = "5s", ttl = "15s", handle = idem)]
async fn first(idem: &Idem, part: &str, k: u64) -> Result<String, Error> {
    Ok(result())
}

#[idem::idempotent(key = "m-first-fp:<part>:<k>", lease = "5s", ttl = "15s", handle = idem, fingerprint = [cmd])]
async fn first_fp(idem: &Idem, part: &str, k: u64, cmd: &Cmd) -> Result<String, Error> {
    Ok(result())
}

/// The memory store's first calls live briefly, purged by a background task,
/// so a multi-second run stays small.
#[idem::idempotent(key = "m-mem-first:<part>:<k>", lease = "500ms", ttl = "1s", handle = idem)]
async fn mem_first(idem: &Idem, part: &str, k: u64) -> Result<String, Error> {
    Ok(result())
}

#[idem::idempotent(key = "m-mem-first-fp:<part>:<k>", lease = "500ms", ttl = "1s", handle = idem, fingerprint = [cmd])]
async fn mem_first_fp(idem: &Idem, part: &str, k: u64, cmd: &Cmd) -> Result<String, Error> {
    Ok(result())
}

/// The durations the functions above write, for the guard side: (lease, ttl).
fn durations(on: On, replay: bool) -> (Duration, Duration) {
    match (on, replay) {
        (_, true) => (Duration::from_secs(5), Duration::from_secs(3_600)),
        (On::Memory, false) => (Duration::from_millis(500), Duration::from_secs(1)),
        (_, false) => (Duration::from_secs(5), Duration::from_secs(15)),
    }
}

/// How a side calls.
#[derive(Debug, Clone, Copy)]
enum Call {
    Macro,
    MacroFp,
    Guard,
}

async fn call(
    how: Call,
    on: On,
    replay: bool,
    idem: &Idem,
    part: &str,
    k: u64,
) -> Result<String, Error> {
    let mem = on == On::Memory;
    match (how, replay) {
        (Call::Macro, true) => dup(idem, part, k).await,
        (Call::MacroFp, true) => dup_fp(idem, part, k, &CMD).await,
        (Call::Macro, false) if mem => mem_first(idem, part, k).await,
        (Call::MacroFp, false) if mem => mem_first_fp(idem, part, k, &CMD).await,
        (Call::Macro, false) => first(idem, part, k).await,
        (Call::MacroFp, false) => first_fp(idem, part, k, &CMD).await,
        (Call::Guard, _) => {
            let (lease, ttl) = durations(on, replay);
            let out = idem
                .guard("order-create", &[&part, &k])
                .lease(lease)
                .ttl(ttl)
                .run(|| async { Ok::<_, Error>(result()) })
                .await?;
            Ok(out.into_inner())
        }
    }
}

fn side(how: Call, on: On, replay: bool, idem: Idem, part: Arc<str>) -> Op {
    op(move |i| {
        let (idem, part) = (idem.clone(), Arc::clone(&part));
        async move {
            let k = if replay { i % DUP_KEYS } else { i };
            black_box(call(how, on, replay, &idem, &part, k).await?);
            Ok(())
        }
    })
}

async fn handle(env: &Env, on: On) -> anyhow::Result<Idem> {
    Ok(match on {
        On::Memory => {
            let store = Arc::new(MemoryStore::new());
            let idem = Idem::builder()
                .shared_store(store.clone())
                .namespace(env.ns.clone())
                .build()?;
            let weak = Arc::downgrade(&store);
            drop(store);
            // Ends when the row drops its handle (and with it the store).
            tokio::spawn(async move {
                while let Some(store) = weak.upgrade() {
                    let _ = idem::Store::purge_expired(&*store).await;
                    drop(store);
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            });
            idem
        }
        On::Redis => redis::idem_on(env, redis::store(env, redis::PREFIX).await?)?,
        On::Cluster => crate::cluster::handle(env).await?.0,
        On::Postgres => crate::sqlstore::handle(env, Db::Postgres).await?,
    })
}

/// The sides of one row: duplicates (`replay`) or first calls.
pub(crate) async fn row(
    env: &Env,
    on: On,
    replay: bool,
) -> anyhow::Result<Vec<crate::harness::Side>> {
    let idem = handle(env, on).await?;
    let hows = [Call::Macro, Call::Guard, Call::MacroFp];
    let part: Arc<str> = match replay {
        true => DUP.into(),
        false => format!("{}m", env.tag).into(),
    };
    if replay {
        // c=1 and c=64 share the records: a second set-up replays them.
        for how in hows {
            for k in 0..DUP_KEYS {
                call(how, on, true, &idem, &part, k).await?;
            }
        }
    }
    let [a, b, c] = hows.map(|how| side(how, on, replay, idem.clone(), Arc::clone(&part)));
    Ok(sides(
        [a, b, c],
        [
            "A #[idempotent]",
            "B idem.guard(..).run, the same call",
            "C #[idempotent] with fingerprint = [cmd]",
        ],
    ))
}

/// Deletes the long-lived Redis records of the duplicate rows.
pub(crate) async fn cleanup(env: &Env) -> anyhow::Result<()> {
    let store = redis::store(env, redis::PREFIX).await?;
    let mut con = store.connection();
    for scene in ["m-dup", "m-dup-fp"] {
        let mut cmd = ::idem::store::redis::redis::cmd("UNLINK");
        for k in 0..DUP_KEYS {
            cmd.arg(format!("{}{{{}:{scene}:{DUP}:{k}}}", redis::PREFIX, env.ns));
        }
        let _: i64 = cmd.query_async(&mut con).await?;
    }
    Ok(())
}

/// `--count SIDE`: 20,000 memory-store calls of one side (`macro`, `guard`,
/// `macro-fp`, each `-dup` or `-first`) on one thread, inside
/// [`measured`], for `valgrind --tool=callgrind
/// --toggle-collect='*macro_rows*measured*'`: the instructions a call costs,
/// repeatable whatever else the machine runs.
pub(crate) fn count(what: &str) -> anyhow::Result<()> {
    const CALLS: u64 = 20_000;
    let env = &Env {
        cluster: None,
        redis_url: String::new(),
        pg_url: String::new(),
        mysql_url: String::new(),
        ns: "count".into(),
        tag: String::new(),
    };
    let (how, replay) = match what {
        "macro-dup" => (Call::Macro, true),
        "guard-dup" => (Call::Guard, true),
        "macro-fp-dup" => (Call::MacroFp, true),
        "macro-first" => (Call::Macro, false),
        "guard-first" => (Call::Guard, false),
        "macro-fp-first" => (Call::MacroFp, false),
        other => anyhow::bail!("--count {other}: expected macro|guard|macro-fp, -dup or -first"),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let idem = rt.block_on(handle(env, On::Memory))?;
    let part = if replay { DUP } else { "count" };
    rt.block_on(async {
        for k in 0..DUP_KEYS {
            call(how, On::Memory, true, &idem, DUP, k).await?;
        }
        for k in 0..2_000 {
            call(how, On::Memory, replay, &idem, part, CALLS + k).await?;
        }
        anyhow::Ok(())
    })?;
    let n = measured(&rt, how, replay, &idem, part, CALLS)?;
    println!("{what}: {n} calls");
    Ok(())
}

#[inline(never)]
fn measured(
    rt: &tokio::runtime::Runtime,
    how: Call,
    replay: bool,
    idem: &Idem,
    part: &str,
    calls: u64,
) -> anyhow::Result<u64> {
    rt.block_on(async {
        for i in 0..calls {
            let k = if replay { i % DUP_KEYS } else { i };
            black_box(call(how, On::Memory, replay, idem, part, k).await?);
        }
        anyhow::Ok(calls)
    })
}
