//! Redis memory per record: `MEMORY USAGE` of an idem record beside a plain
//! string of the same size and a `SET NX` marker.

use idem::store::redis::redis;
use serde::Serialize;

use crate::Env;
use crate::redis::{DUP_TTL, LEASE, idem_on, result, store};

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
    g.run(|| async { Ok::<_, idem::Error>(result()) }).await?;
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
