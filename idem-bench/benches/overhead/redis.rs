//! Redis: the guard on `RedisStore` against the native floor (the same commands
//! by hand on the same multiplexed connection), against idem's fenced path (the
//! scripts), and against the crates users would pick instead ([`crate::peers`]),
//! all in one interleaved run.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use idem::store::redis::{__bench, RedisStore, redis};
use redis::{Script, Value};

use crate::Env;
use crate::harness::{Op, Side, op};

/// Prefix of every Redis key the benchmark writes.
pub(crate) const PREFIX: &str = "idem-bench:";
/// Finished records replayed by the duplicate scenarios.
pub(crate) const DUP_KEYS: u64 = 1_000;
pub(crate) const LEASE: Duration = Duration::from_secs(5);
/// First-call records expire soon after the run (they are never deleted one by one).
pub(crate) const TTL: Duration = Duration::from_secs(15);
pub(crate) const DUP_TTL: Duration = Duration::from_secs(3_600);

/// The business result: a 200-character string.
pub(crate) fn result() -> String {
    "r".repeat(200)
}

pub(crate) async fn store(env: &Env, prefix: &str) -> anyhow::Result<RedisStore> {
    RedisStore::builder(&env.redis_url)
        .prefix(prefix)
        .connect()
        .await
        .map_err(|e| anyhow::anyhow!("Redis at {} is required: {e}", env.redis_url))
}

pub(crate) fn idem_on(env: &Env, store: RedisStore) -> anyhow::Result<idem::Idem> {
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

/// An in-progress value as idem writes it: state, owner, fence 0, fingerprint.
fn pending(owner: &[u8; 16]) -> [u8; 41] {
    let mut v = [0u8; 41];
    v[0] = 0xC1;
    v[1..17].copy_from_slice(owner);
    v
}

/// The result framed as idem stores it (`I1`, version, kind, JSON).
fn framed(value: &str) -> anyhow::Result<Vec<u8>> {
    let mut payload = Vec::with_capacity(256);
    payload.extend_from_slice(b"I1");
    payload.extend_from_slice(&0u32.to_le_bytes());
    payload.push(0);
    serde_json::to_writer(&mut payload, value)?;
    Ok(payload)
}

/// The record key idem uses for `ns:order-create:<a>:<b>`.
fn record_key(ns: &str, a: impl std::fmt::Display, b: impl std::fmt::Display) -> String {
    format!("{PREFIX}{{{ns}:order-create:{a}:{b}}}")
}

/// Writes the finished records (through idem) the duplicate scenarios read.
pub(crate) async fn prepare(env: &Env) -> anyhow::Result<()> {
    let idem = idem_on(env, store(env, PREFIX).await?)?;
    for k in 0..DUP_KEYS {
        let out = idem
            .guard("order-create", &[&"dup", &k])
            .lease(LEASE)
            .ttl(DUP_TTL)
            .run(|| async { Ok::<_, idem::Error>(result()) })
            .await?;
        anyhow::ensure!(!out.is_replay(), "duplicate key {k} existed before the run");
    }
    crate::peers::prepare(env).await
}

/// A guarded call through idem: `fenced` bodies read their fence (the claim
/// script), the others claim with the native command (what `#[idempotent]` does
/// for a function without an `idem::Fence` parameter).
pub(crate) fn guarded(
    idem: idem::Idem,
    fenced: bool,
    replay: bool,
    part: Arc<str>,
    keys: u64,
    ttl: Duration,
) -> Op {
    op(move |i| {
        let (idem, part) = (idem.clone(), Arc::clone(&part));
        async move {
            let k = if replay { i % keys } else { i };
            let g = idem
                .guard("order-create", &[&&*part, &k])
                .lease(LEASE)
                .ttl(ttl);
            let out = if fenced {
                g.run_fenced(|fence| async move {
                    black_box(fence);
                    Ok::<_, idem::Error>(result())
                })
                .await?
            } else {
                g.run(|| async { Ok::<_, idem::Error>(result()) }).await?
            };
            anyhow::ensure!(out.is_replay() == replay, "expected replay = {replay}");
            black_box(out.into_inner());
            Ok(())
        }
    })
}

/// Decodes a finished record's value the way idem does (header, framing, JSON).
fn decode_done(value: &[u8]) -> anyhow::Result<String> {
    anyhow::ensure!(value.len() >= 48 && value[0] == 0xD1 && &value[41..43] == b"I1");
    Ok(serde_json::from_slice(&value[48..])?)
}

/// A: a duplicate through idem (`#[idempotent]` without a fence: one `SET NX PX GET`).
/// B: the native floor, the same `SET NX PX GET` by hand, the record decoded the same way.
/// C: idem with a fence (one `EVALSHA` of the claim script).
/// D, E: `idempotent` 0.3, `klauthed-data` 1.0.
pub(crate) async fn duplicate(env: &Env) -> anyhow::Result<Vec<Side>> {
    let store = store(env, PREFIX).await?;
    let con = store.connection();
    let idem = idem_on(env, store)?;
    let dup: Arc<str> = "dup".into();
    let a = guarded(
        idem.clone(),
        false,
        true,
        Arc::clone(&dup),
        DUP_KEYS,
        DUP_TTL,
    );
    let c = guarded(idem, true, true, dup, DUP_KEYS, DUP_TTL);
    let b = dup_floor(con, env.ns.as_str().into());
    let [d, e] = crate::peers::duplicate(env).await?;
    Ok(sides(
        [a, b, c, d, e],
        [
            "A idem (no fence: SET NX PX GET)",
            "B native floor: SET NX PX GET by hand",
            "C idem with fence (claim script)",
            "D idempotent 0.3 (ValkeyStore)",
            "E klauthed-data 1.0",
        ],
    ))
}

/// The native floor of a duplicate: `SET NX PX GET` on idem's record key by
/// hand, the finished record decoded the way idem does.
pub(crate) fn dup_floor<C>(con: C, ns: Arc<str>) -> Op
where
    C: redis::aio::ConnectionLike + Clone + Send + Sync + 'static,
{
    op(move |i| {
        let (mut con, ns) = (con.clone(), Arc::clone(&ns));
        async move {
            let reply: Value = redis::cmd("SET")
                .arg(record_key(&ns, "dup", i % DUP_KEYS))
                .arg(&pending(&owner())[..])
                .arg("NX")
                .arg("PX")
                .arg(LEASE.as_millis() as u64)
                .arg("GET")
                .query_async(&mut con)
                .await?;
            let Value::BulkString(v) = reply else {
                anyhow::bail!("expected the finished record, got {reply:?}")
            };
            black_box(decode_done(&v)?);
            Ok(())
        }
    })
}

/// A first call by hand: `SET NX PX GET`, then the complete script (`Some`) or
/// the floor's `SET XX PX` (`None`: no owner check).
pub(crate) fn first_by_hand<C>(
    con: C,
    ns: Arc<str>,
    tag: String,
    complete: Option<Arc<Script>>,
) -> Op
where
    C: redis::aio::ConnectionLike + Clone + Send + Sync + 'static,
{
    op(move |i| {
        let (mut con, ns, tag, complete) =
            (con.clone(), Arc::clone(&ns), tag.clone(), complete.clone());
        async move {
            let key = record_key(&ns, &tag, i);
            let owner = owner();
            let claimed: Value = redis::cmd("SET")
                .arg(&key)
                .arg(&pending(&owner)[..])
                .arg("NX")
                .arg("PX")
                .arg(LEASE.as_millis() as u64)
                .arg("GET")
                .query_async(&mut con)
                .await?;
            anyhow::ensure!(claimed == Value::Nil, "expected a new key, got {claimed:?}");
            let value = black_box(result());
            let payload = framed(&value)?;
            let mut done = Vec::with_capacity(41 + payload.len());
            done.extend_from_slice(&pending(&owner));
            done[0] = 0xD1;
            done.extend_from_slice(&payload);
            match complete {
                Some(script) => {
                    let done: i64 = script
                        .key(&key)
                        .arg(&pending(&owner)[..])
                        .arg(&owner[..])
                        .arg(done)
                        .arg(TTL.as_millis() as u64)
                        .invoke_async(&mut con)
                        .await?;
                    anyhow::ensure!(done == 1, "complete answered {done}");
                }
                None => {
                    let ok: Option<String> = redis::cmd("SET")
                        .arg(&key)
                        .arg(done)
                        .arg("XX")
                        .arg("PX")
                        .arg(TTL.as_millis() as u64)
                        .query_async(&mut con)
                        .await?;
                    anyhow::ensure!(ok.is_some(), "SET XX found no key");
                }
            }
            black_box(value);
            Ok(())
        }
    })
}

pub(crate) fn sides<const N: usize>(ops: [Op; N], names: [&'static str; N]) -> Vec<Side> {
    ops.into_iter()
        .zip(names)
        .map(|(op, name)| Side { name, op })
        .collect()
}

/// A: a first call through idem without a fence (`SET NX PX GET`, complete script).
/// B: the native floor: `SET NX PX GET`, then `SET XX PX` with the result (no
///    owner check: the floor, not a safe protocol).
/// C: idem with a fence (claim and complete scripts).
/// D, E: `idempotent` 0.3, `klauthed-data` 1.0.
/// F: A's round trips by hand (`SET NX PX GET`, the complete script).
pub(crate) async fn first(env: &Env) -> anyhow::Result<Vec<Side>> {
    let store = store(env, PREFIX).await?;
    let con = store.connection();
    let idem = idem_on(env, store)?;
    let tag = env.tag.as_str();
    let a = guarded(idem.clone(), false, false, format!("{tag}a").into(), 0, TTL);
    let c = guarded(idem, true, false, format!("{tag}c").into(), 0, TTL);
    let ns: Arc<str> = env.ns.as_str().into();
    let b = first_by_hand(con.clone(), Arc::clone(&ns), format!("{tag}b"), None);
    let complete = Some(Arc::new(Script::new(__bench::COMPLETE)));
    let f = first_by_hand(con, ns, format!("{tag}f"), complete);
    let [d, e] = crate::peers::first(env).await?;
    Ok(sides(
        [a, b, c, d, e, f],
        [
            "A idem (no fence: SET NX PX GET + complete script)",
            "B native floor: SET NX PX GET + SET XX by hand",
            "C idem with fence (claim + complete scripts)",
            "D idempotent 0.3 (ValkeyStore)",
            "E klauthed-data 1.0",
            "F A's round trips by hand",
        ],
    ))
}

/// Deletes the duplicate scenarios' records (first-call records expire within `TTL`).
pub(crate) async fn cleanup(env: &Env) -> anyhow::Result<()> {
    let store = store(env, PREFIX).await?;
    let mut con = store.connection();
    for chunk in (0..DUP_KEYS).collect::<Vec<_>>().chunks(200) {
        let mut cmd = redis::cmd("UNLINK");
        for k in chunk {
            cmd.arg(record_key(&env.ns, "dup", k));
        }
        let _: i64 = cmd.query_async(&mut con).await?;
    }
    crate::peers::cleanup(env).await
}
