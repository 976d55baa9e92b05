//! The memory store: the guard's CPU-only ceiling, beside a bare
//! `HashMap` under a `Mutex` doing the same lookups and inserts.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idem::MemoryStore;

use crate::Env;
use crate::harness::{Side, guarded_replay, op};
use crate::redis::result;

const DUP_KEYS: u64 = 1_000;
/// Short record life: a background task purges expired records so a
/// multi-second run stays small.
const LEASE: Duration = Duration::from_millis(500);
const TTL: Duration = Duration::from_secs(1);

type Map = Arc<Mutex<HashMap<String, Vec<u8>>>>;

fn framed(value: &str) -> anyhow::Result<Vec<u8>> {
    let mut payload = Vec::with_capacity(64);
    payload.extend_from_slice(b"I1");
    payload.extend_from_slice(&0u32.to_le_bytes());
    payload.push(0);
    serde_json::to_writer(&mut payload, value)?;
    Ok(payload)
}

fn handle(env: &Env) -> anyhow::Result<(idem::Idem, Arc<MemoryStore>)> {
    let store = Arc::new(MemoryStore::new());
    let idem = idem::Idem::builder()
        .shared_store(store.clone())
        .namespace(env.ns.clone())
        .build()?;
    Ok((idem, store))
}

pub(crate) async fn duplicate(env: &Env) -> anyhow::Result<Vec<Side>> {
    let (idem, _) = handle(env)?;
    let map: Map = Arc::default();
    for k in 0..DUP_KEYS {
        idem.guard("order-create", &[&"dup", &k])
            .ttl(Duration::from_secs(3_600))
            .run(|| async { Ok::<_, idem::Error>(result()) })
            .await?;
        map.lock().unwrap().insert(
            format!("{}:order-create:dup:{k}", env.ns),
            framed(&result())?,
        );
    }
    let a = guarded_replay(idem, DUP_KEYS, Duration::from_secs(3_600), LEASE);
    let ns: Arc<str> = env.ns.as_str().into();
    let b = op(move |i| {
        let (map, ns) = (Arc::clone(&map), Arc::clone(&ns));
        async move {
            let key = format!("{ns}:order-create:dup:{}", i % DUP_KEYS);
            let v = map.lock().unwrap().get(&key).cloned();
            let v = v.ok_or_else(|| anyhow::anyhow!("missing {key}"))?;
            let s: String = serde_json::from_slice(&v[7..])?;
            black_box(s);
            Ok(())
        }
    });
    Ok(vec![
        Side {
            name: "A idem",
            op: a,
        },
        Side {
            name: "B HashMap+Mutex",
            op: b,
        },
    ])
}

pub(crate) async fn first(env: &Env) -> anyhow::Result<Vec<Side>> {
    let (idem, store) = handle(env)?;
    let map: Map = Arc::default();
    {
        let (store, map) = (Arc::clone(&store), Arc::clone(&map));
        tokio::spawn(async move {
            // Ends when the scenario drops its handle and map.
            while Arc::strong_count(&map) > 1 {
                tokio::time::sleep(Duration::from_millis(250)).await;
                let _ = idem::Store::purge_expired(&*store).await;
                map.lock().unwrap().clear();
            }
        });
    }
    let tag = format!("{}a", env.tag);
    let a = op(move |i| {
        let (idem, tag) = (idem.clone(), tag.clone());
        async move {
            let out = idem
                .guard("order-create", &[&tag, &i])
                .lease(LEASE)
                .ttl(TTL)
                .run(|| async { Ok::<_, idem::Error>(result()) })
                .await?;
            anyhow::ensure!(!out.is_replay());
            black_box(out.into_inner());
            Ok(())
        }
    });
    let prefix = format!("{}:order-create:{}b:", env.ns, env.tag);
    let b = op(move |i| {
        let (map, prefix) = (Arc::clone(&map), prefix.clone());
        async move {
            let key = format!("{prefix}{i}");
            {
                let mut m = map.lock().unwrap();
                anyhow::ensure!(!m.contains_key(&key));
                m.insert(key.clone(), Vec::new());
            }
            let value = black_box(result());
            let payload = framed(&value)?;
            map.lock().unwrap().insert(key, payload);
            black_box(value);
            Ok(())
        }
    });
    Ok(vec![
        Side {
            name: "A idem",
            op: a,
        },
        Side {
            name: "B HashMap+Mutex",
            op: b,
        },
    ])
}
