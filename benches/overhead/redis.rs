//! Redis: the guard on `RedisStore` against the same scripts sent by hand with
//! redis-rs on the same multiplexed connection, and against what users write
//! today (`SET key 1 NX PX`, then the business, no replay).

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use idem::store::redis::{__bench, RedisStore, redis};
use redis::{Script, Value};
use serde::Serialize;

use crate::Env;
use crate::harness::{Side, guarded_replay, op};

/// Prefix of every Redis key the benchmark writes.
pub(crate) const PREFIX: &str = "idem-bench:";
/// Finished records replayed by the duplicate scenarios.
pub(crate) const DUP_KEYS: u64 = 1_000;
pub(crate) const LEASE: Duration = Duration::from_secs(5);
/// First-call records expire soon after the run (they are never deleted one by one).
pub(crate) const TTL: Duration = Duration::from_secs(15);
const DUP_TTL: Duration = Duration::from_secs(3_600);

/// The business result: a 200-character string.
pub(crate) fn result() -> String {
    "r".repeat(200)
}

async fn store(env: &Env, prefix: &str) -> anyhow::Result<RedisStore> {
    RedisStore::builder(&env.redis_url)
        .prefix(prefix)
        .connect()
        .await
        .map_err(|e| anyhow::anyhow!("Redis at {} is required: {e}", env.redis_url))
}

fn idem_on(env: &Env, store: RedisStore) -> anyhow::Result<idem::Idem> {
    Ok(idem::Idem::builder()
        .store(store)
        .namespace(env.ns.clone())
        .build()?)
}

/// Owner ids for the hand-written side: a random per-process base and a counter,
/// as careful hand-written code would do (no syscall per call).
fn owner() -> [u8; 16] {
    static BASE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = *BASE.get_or_init(crate::rand_u64);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    ((u128::from(base) << 64) | u128::from(n)).to_be_bytes()
}

/// The record key idem uses for `ns:order-create:<a>:<b>`.
fn record_key(ns: &str, a: impl std::fmt::Display, b: impl std::fmt::Display) -> String {
    format!("{PREFIX}{{{ns}:order-create:{a}:{b}}}")
}

fn marker_key(ns: &str, a: impl std::fmt::Display, b: impl std::fmt::Display) -> String {
    format!("{PREFIX}ut:{ns}:order-create:{a}:{b}")
}

/// Writes the finished records (through idem) and markers the duplicate scenarios read.
pub(crate) async fn prepare(env: &Env) -> anyhow::Result<()> {
    let store = store(env, PREFIX).await?;
    let mut con = store.connection();
    let idem = idem_on(env, store)?;
    for k in 0..DUP_KEYS {
        let out = idem
            .guard("order-create", &[&"dup", &k])
            .lease(LEASE)
            .ttl(DUP_TTL)
            .run(|_| async { Ok::<_, idem::Error>(result()) })
            .await?;
        anyhow::ensure!(!out.is_replay(), "duplicate key {k} existed before the run");
        let _: () = redis::cmd("SET")
            .arg(marker_key(&env.ns, "dup", k))
            .arg(1)
            .arg("PX")
            .arg(DUP_TTL.as_millis() as u64)
            .query_async(&mut con)
            .await?;
    }
    Ok(())
}

/// A: a duplicate through idem (one EVALSHA that returns the stored result).
/// B: the same claim script by hand, its reply decoded to the same `String`.
/// C: `SET marker 1 NX PX` answering "duplicate" without a result.
pub(crate) async fn duplicate(env: &Env) -> anyhow::Result<Vec<Side>> {
    let store = store(env, PREFIX).await?;
    let con = store.connection();
    let idem = idem_on(env, store)?;
    let a = guarded_replay(idem, DUP_KEYS, DUP_TTL, LEASE);
    let claim = Arc::new(Script::new(__bench::CLAIM));
    let ns: Arc<str> = env.ns.as_str().into();
    let b = {
        let (con, ns) = (con.clone(), Arc::clone(&ns));
        op(move |i| {
            let (mut con, ns, claim) = (con.clone(), Arc::clone(&ns), Arc::clone(&claim));
            async move {
                let reply: Value = claim
                    .key(record_key(&ns, "dup", i % DUP_KEYS))
                    .arg(&owner()[..])
                    .arg(&[0u8; 16][..])
                    .arg(LEASE.as_millis() as u64)
                    .invoke_async(&mut con)
                    .await?;
                let value = match reply {
                    Value::Array(mut items) if items.len() == 2 => match items.swap_remove(0) {
                        Value::BulkString(v) => v,
                        other => anyhow::bail!("unexpected claim reply {other:?}"),
                    },
                    other => anyhow::bail!("unexpected claim reply {other:?}"),
                };
                // Done record (0xD1, 41-byte header), result framing `I1` + version + kind.
                anyhow::ensure!(value.len() >= 48 && value[0] == 0xD1 && &value[41..43] == b"I1");
                let s: String = serde_json::from_slice(&value[48..])?;
                black_box(s);
                Ok(())
            }
        })
    };
    let c = op(move |i| {
        let (mut con, ns) = (con.clone(), Arc::clone(&ns));
        async move {
            let set: Option<String> = redis::cmd("SET")
                .arg(marker_key(&ns, "dup", i % DUP_KEYS))
                .arg(1)
                .arg("NX")
                .arg("PX")
                .arg(DUP_TTL.as_millis() as u64)
                .query_async(&mut con)
                .await?;
            anyhow::ensure!(set.is_none(), "marker should exist");
            Ok(())
        }
    });
    Ok(vec![
        Side {
            name: "A idem",
            op: a,
        },
        Side {
            name: "B same script by hand",
            op: b,
        },
        Side {
            name: "C SET NX (users today)",
            op: c,
        },
    ])
}

/// A: a first call through idem (claim, body, complete: two EVALSHA).
/// B: the same two scripts by hand, the result framed and encoded the same way.
/// C: `SET marker 1 NX PX`, then the business (one round trip, nothing to replay).
pub(crate) async fn first(env: &Env) -> anyhow::Result<Vec<Side>> {
    let store = store(env, PREFIX).await?;
    let con = store.connection();
    let idem = idem_on(env, store)?;
    let tag: Arc<str> = env.tag.as_str().into();
    let ns: Arc<str> = env.ns.as_str().into();
    let a = {
        let tag = format!("{tag}a");
        op(move |i| {
            let (idem, tag) = (idem.clone(), tag.clone());
            async move {
                let out = idem
                    .guard("order-create", &[&tag, &i])
                    .lease(LEASE)
                    .ttl(TTL)
                    .run(|_| async { Ok::<_, idem::Error>(result()) })
                    .await?;
                anyhow::ensure!(!out.is_replay(), "expected a first call");
                black_box(out.into_inner());
                Ok(())
            }
        })
    };
    let claim = Arc::new(Script::new(__bench::CLAIM));
    let complete = Arc::new(Script::new(__bench::COMPLETE));
    let b = {
        let (con, ns, tag) = (con.clone(), Arc::clone(&ns), format!("{tag}b"));
        op(move |i| {
            let (mut con, ns, tag) = (con.clone(), Arc::clone(&ns), tag.clone());
            let (claim, complete) = (Arc::clone(&claim), Arc::clone(&complete));
            async move {
                let key = record_key(&ns, &tag, i);
                let owner = owner();
                let fence: Value = claim
                    .key(&key)
                    .arg(&owner[..])
                    .arg(&[0u8; 16][..])
                    .arg(LEASE.as_millis() as u64)
                    .invoke_async(&mut con)
                    .await?;
                let Value::Int(fence) = fence else {
                    anyhow::bail!("expected a fence, got {fence:?}")
                };
                let value = black_box(result());
                black_box(fence);
                let mut payload = Vec::with_capacity(64);
                payload.extend_from_slice(b"I1");
                payload.extend_from_slice(&0u32.to_le_bytes());
                payload.push(0);
                serde_json::to_writer(&mut payload, &value)?;
                let done: i64 = complete
                    .key(&key)
                    .arg(&owner[..])
                    .arg(payload)
                    .arg(TTL.as_millis() as u64)
                    .invoke_async(&mut con)
                    .await?;
                anyhow::ensure!(done == 1, "complete answered {done}");
                black_box(value);
                Ok(())
            }
        })
    };
    let c = {
        let tag = format!("{tag}c");
        op(move |i| {
            let (mut con, ns, tag) = (con.clone(), Arc::clone(&ns), tag.clone());
            async move {
                let set: Option<String> = redis::cmd("SET")
                    .arg(marker_key(&ns, &tag, i))
                    .arg(1)
                    .arg("NX")
                    .arg("PX")
                    .arg(TTL.as_millis() as u64)
                    .query_async(&mut con)
                    .await?;
                anyhow::ensure!(set.is_some(), "marker should be new");
                black_box(result());
                Ok(())
            }
        })
    };
    Ok(vec![
        Side {
            name: "A idem",
            op: a,
        },
        Side {
            name: "B same scripts by hand",
            op: b,
        },
        Side {
            name: "C SET NX + business (users today)",
            op: c,
        },
    ])
}

#[derive(Debug, Serialize)]
pub(crate) struct MemoryRow {
    pub(crate) what: &'static str,
    pub(crate) usage: i64,
    pub(crate) key_len: usize,
    pub(crate) result_len: usize,
    pub(crate) overhead: i64,
    pub(crate) target: bool,
}

#[derive(Debug, Serialize)]
pub(crate) struct MemoryReport {
    pub(crate) rows: Vec<MemoryRow>,
}

/// `MEMORY USAGE` of one record with a 41-byte idem key and a 200-byte result,
/// beside a plain string of the same size and a `SET NX` marker.
pub(crate) async fn memory_usage(env: &Env) -> anyhow::Result<MemoryReport> {
    let store = store(env, "").await?;
    let mut con = store.connection();
    let idem = idem_on(env, store.clone())?;
    let head = format!("{}:order-create:m:", env.ns);
    anyhow::ensure!(head.len() < 41, "namespace too long for a 41-byte key");
    let pad = |n: u32| format!("{n:0>width$}", width = 41 - head.len());
    let mut rows = Vec::new();
    let ucon = con.clone();
    let usage = move |key: Vec<u8>| {
        let mut con = ucon.clone();
        async move {
            let u: i64 = redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(&key)
                .query_async(&mut con)
                .await?;
            let _: i64 = redis::cmd("DEL").arg(&key).query_async(&mut con).await?;
            anyhow::Ok(u)
        }
    };

    // Through the store: a 200-byte payload.
    let key = format!("{head}{}", pad(1));
    assert_eq!(key.len(), 41);
    let owner = idem::store::Owner(u128::from(crate::rand_u64()));
    let claim = idem::Store::claim(
        &store,
        idem::store::ClaimRequest {
            key: &key,
            owner,
            fingerprint: idem::fingerprint::Fingerprint::NONE,
            lease: LEASE,
        },
    )
    .await?;
    anyhow::ensure!(matches!(claim, idem::store::Claim::Claimed { .. }));
    idem::Store::complete(&store, &key, owner, &[b'r'; 200], DUP_TTL).await?;
    let u = usage(store.record_key(&key)).await?;
    rows.push(MemoryRow {
        what: "idem record (store, 200-byte payload)",
        usage: u,
        key_len: 41,
        result_len: 200,
        overhead: u - 241,
        target: true,
    });

    // Through the guard: a 200-character String result (JSON + 7-byte framing).
    let g = idem
        .guard("order-create", &[&"m", &pad(2)])
        .ttl(DUP_TTL)
        .lease(LEASE);
    anyhow::ensure!(g.key().as_str().len() == 41, "{:?}", g.key());
    let rk = store.record_key(g.key().as_str());
    g.run(|_| async { Ok::<_, idem::Error>(result()) }).await?;
    let u = usage(rk).await?;
    rows.push(MemoryRow {
        what: "idem record (guard, 200-char String result)",
        usage: u,
        key_len: 41,
        result_len: 200,
        overhead: u - 241,
        target: true,
    });

    // Floor: the same bytes as a plain string with an expiry.
    let plain = format!("{head}{}", pad(3)).into_bytes();
    let _: () = redis::cmd("SET")
        .arg(&plain)
        .arg(vec![b'r'; 200])
        .arg("PX")
        .arg(DUP_TTL.as_millis() as u64)
        .query_async(&mut con)
        .await?;
    let u = usage(plain).await?;
    rows.push(MemoryRow {
        what: "plain SET key value PX (Redis floor)",
        usage: u,
        key_len: 41,
        result_len: 200,
        overhead: u - 241,
        target: false,
    });

    // What users write today: a marker, no result kept.
    let marker = format!("{head}{}", pad(4)).into_bytes();
    let _: Option<String> = redis::cmd("SET")
        .arg(&marker)
        .arg(1)
        .arg("NX")
        .arg("PX")
        .arg(DUP_TTL.as_millis() as u64)
        .query_async(&mut con)
        .await?;
    let u = usage(marker).await?;
    rows.push(MemoryRow {
        what: "SET key 1 NX PX marker (no result)",
        usage: u,
        key_len: 41,
        result_len: 0,
        overhead: u - 41,
        target: false,
    });
    Ok(MemoryReport { rows })
}

/// Deletes the duplicate scenarios' records and markers (first-call records expire
/// within `TTL`).
pub(crate) async fn cleanup(env: &Env) -> anyhow::Result<()> {
    let store = store(env, PREFIX).await?;
    let mut con = store.connection();
    for chunk in (0..DUP_KEYS).collect::<Vec<_>>().chunks(200) {
        let mut cmd = redis::cmd("UNLINK");
        for k in chunk {
            cmd.arg(record_key(&env.ns, "dup", k))
                .arg(marker_key(&env.ns, "dup", k));
        }
        let _: i64 = cmd.query_async(&mut con).await?;
    }
    Ok(())
}
