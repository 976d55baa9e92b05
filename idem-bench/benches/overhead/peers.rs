//! The crates users would pick instead of idem, each driven as its docs show,
//! on its own multiplexed connection to the same Redis:
//!
//! - `idempotent` 0.3 (feature `valkey`): `ValkeyStore::try_insert` (one
//!   `EVALSHA`: `HGET`, or `HSET` + `PEXPIRE`) and `complete` (one `EVALSHA`:
//!   fencing-token check, `HSET`, `HDEL`, `PEXPIRE`); records are hashes of a
//!   postcard-encoded entry. Its fencing token is a random number checked at
//!   completion, not a fence that grows per key.
//! - `klauthed-data` 1.0 (feature `redis`): `RedisIdempotencyStore::begin`
//!   (`SET NX PX`, then `GET` when the key exists) and `complete` (`GET`, then
//!   `SET PX`); JSON records, no owner check at completion.
//!
//! Both store the same 200-character result as idem and decode it on a replay.

use std::hint::black_box;
use std::sync::Arc;

use idem::store::redis::redis;
use idempotent::entry::ExistingEntry;
use idempotent::fingerprint::{DefaultFingerprintStrategy, FingerprintStrategy};
use idempotent::store::valkey::ValkeyStore;
use idempotent::store::{IdempotencyStore as _, InsertResult};
use idempotent::{CachedResponse, IdempotencyEntry, IdempotencyKey, Metadata};
use klauthed_data::idempotency::redis::RedisIdempotencyStore;
use klauthed_data::idempotency::{IdempotencyStore as _, Outcome};

use crate::Env;
use crate::harness::{Op, op};
use crate::redis::{DUP_KEYS, DUP_TTL, PREFIX, TTL, result};

/// `idempotent` prefixes keys as `<prefix>-<key>`.
const IDEMPOTENT_PREFIX: &str = "idem-bench:pi";
/// `klauthed-data` takes keys as they are: ours start with this.
const KLAUTHED_PREFIX: &str = "idem-bench:pk:";

async fn client(env: &Env) -> anyhow::Result<redis::Client> {
    Ok(redis::Client::open(env.redis_url.as_str())?)
}

async fn idempotent_store(env: &Env) -> anyhow::Result<Arc<ValkeyStore>> {
    let store = ValkeyStore::with_prefix(client(env).await?, Some(IDEMPOTENT_PREFIX)).await?;
    Ok(Arc::new(store))
}

async fn klauthed_store(env: &Env, ttl_ms: u64) -> anyhow::Result<Arc<RedisIdempotencyStore>> {
    let con = client(env).await?.get_connection_manager().await?;
    Ok(Arc::new(RedisIdempotencyStore::with_ttl_ms(con, ttl_ms)))
}

fn fingerprint() -> idempotent::Fingerprint {
    DefaultFingerprintStrategy.compute("order-create", b"")
}

fn dup_key(ns: &str, k: u64) -> String {
    format!("{ns}:order-create:dup:{k}")
}

/// One `idempotent` call: claim, run, complete; or the stored response.
async fn idempotent_call(
    store: &ValkeyStore,
    key: String,
    ttl: std::time::Duration,
) -> anyhow::Result<(bool, String)> {
    let key = IdempotencyKey::new(key)?;
    let fp = fingerprint();
    let entry = IdempotencyEntry::new(fp, ttl);
    match store.try_insert(&key, entry.clone()).await? {
        InsertResult::Claimed { fencing_token } => {
            let value = result();
            let response = CachedResponse {
                status_code: 200,
                metadata: Metadata::default(),
                body: serde_json::to_vec(&value)?.into(),
            };
            store
                .complete(&key, entry.complete(response), fencing_token)
                .await?;
            Ok((false, value))
        }
        InsertResult::Exists(ExistingEntry::Completed(done)) => {
            anyhow::ensure!(done.fingerprint_matches(fp), "fingerprint mismatch");
            Ok((true, serde_json::from_slice(&done.into_response().body)?))
        }
        InsertResult::Exists(ExistingEntry::Processing(_)) => anyhow::bail!("in progress"),
    }
}

/// One `klauthed-data` call: begin, run, complete; or the stored response.
async fn klauthed_call(store: &RedisIdempotencyStore, key: &str) -> anyhow::Result<(bool, String)> {
    match store.begin(key).await? {
        Outcome::New => {
            let value = result();
            store
                .complete(key, serde_json::Value::String(value.clone()))
                .await?;
            Ok((false, value))
        }
        Outcome::Completed(v) => Ok((true, serde_json::from_value(v)?)),
        Outcome::InProgress => anyhow::bail!("in progress"),
    }
}

/// Finishes the records the duplicate sides replay.
pub(crate) async fn prepare(env: &Env) -> anyhow::Result<()> {
    let a = idempotent_store(env).await?;
    let b = klauthed_store(env, DUP_TTL.as_millis() as u64).await?;
    for k in 0..DUP_KEYS {
        let (replay, _) = idempotent_call(&a, dup_key(&env.ns, k), DUP_TTL).await?;
        anyhow::ensure!(!replay, "idempotent: key {k} existed before the run");
        let (replay, _) =
            klauthed_call(&b, &format!("{KLAUTHED_PREFIX}{}", dup_key(&env.ns, k))).await?;
        anyhow::ensure!(!replay, "klauthed-data: key {k} existed before the run");
    }
    Ok(())
}

/// The duplicate sides: (`idempotent`, `klauthed-data`).
pub(crate) async fn duplicate(env: &Env) -> anyhow::Result<[Op; 2]> {
    let a = idempotent_store(env).await?;
    let b = klauthed_store(env, DUP_TTL.as_millis() as u64).await?;
    let ns: Arc<str> = env.ns.as_str().into();
    let idempotent = {
        let ns = Arc::clone(&ns);
        op(move |i| {
            let (a, ns) = (Arc::clone(&a), Arc::clone(&ns));
            async move {
                let (replay, v) = idempotent_call(&a, dup_key(&ns, i % DUP_KEYS), DUP_TTL).await?;
                anyhow::ensure!(replay, "idempotent: expected a replay");
                black_box(v);
                Ok(())
            }
        })
    };
    let klauthed = op(move |i| {
        let (b, ns) = (Arc::clone(&b), Arc::clone(&ns));
        async move {
            let key = format!("{KLAUTHED_PREFIX}{}", dup_key(&ns, i % DUP_KEYS));
            let (replay, v) = klauthed_call(&b, &key).await?;
            anyhow::ensure!(replay, "klauthed-data: expected a replay");
            black_box(v);
            Ok(())
        }
    });
    Ok([idempotent, klauthed])
}

/// The first-call sides: (`idempotent`, `klauthed-data`); keys carry `tag`.
pub(crate) async fn first(env: &Env) -> anyhow::Result<[Op; 2]> {
    let a = idempotent_store(env).await?;
    let b = klauthed_store(env, TTL.as_millis() as u64).await?;
    let head: Arc<str> = format!("{}:order-create:{}", env.ns, env.tag).into();
    let idempotent = {
        let head = Arc::clone(&head);
        op(move |i| {
            let (a, head) = (Arc::clone(&a), Arc::clone(&head));
            async move {
                let (replay, v) = idempotent_call(&a, format!("{head}:{i}"), TTL).await?;
                anyhow::ensure!(!replay, "idempotent: expected a first call");
                black_box(v);
                Ok(())
            }
        })
    };
    let klauthed = op(move |i| {
        let (b, head) = (Arc::clone(&b), Arc::clone(&head));
        async move {
            let (replay, v) = klauthed_call(&b, &format!("{KLAUTHED_PREFIX}{head}:{i}")).await?;
            anyhow::ensure!(!replay, "klauthed-data: expected a first call");
            black_box(v);
            Ok(())
        }
    });
    Ok([idempotent, klauthed])
}

/// Deletes the duplicate records of both peers (first-call records expire).
pub(crate) async fn cleanup(env: &Env) -> anyhow::Result<()> {
    let mut con = client(env)
        .await?
        .get_multiplexed_async_connection()
        .await?;
    for chunk in (0..DUP_KEYS).collect::<Vec<_>>().chunks(200) {
        let mut cmd = redis::cmd("UNLINK");
        for &k in chunk {
            cmd.arg(format!("{IDEMPOTENT_PREFIX}-{}", dup_key(&env.ns, k)))
                .arg(format!("{KLAUTHED_PREFIX}{}", dup_key(&env.ns, k)));
        }
        let _: i64 = cmd.query_async(&mut con).await?;
    }
    let _ = PREFIX;
    Ok(())
}
