//! The SQL record stores (PostgreSQL, MariaDB): the guard on `SqlStore` against
//! the same statements, with the same commits, sent by hand on the same pool.
//!
//! Per call, as the stores send them (texts taken from the store itself):
//! - PostgreSQL duplicate: the claim statement (one CTE that reads the live row);
//!   first call: the claim statement (it inserts), then `complete` (one `UPDATE`).
//! - MariaDB duplicate: `select_live`; first call: `select_live`, then one
//!   transaction (`next_fence`, the claim upsert, `COMMIT`), then `complete`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use idem::store::sql::{SqlStore, TableNames};
use sqlx::{AssertSqlSafe, Row};

use crate::Env;
use crate::harness::{Side, guarded_replay, op};
use crate::redis::result;
use crate::sql::{Db, Pool};

/// Finished records replayed by the duplicate scenarios.
const DUP_KEYS: u64 = 200;
const LEASE: Duration = Duration::from_secs(5);
const TTL: Duration = Duration::from_secs(3_600);

pub(crate) fn names(env: &Env) -> anyhow::Result<TableNames> {
    Ok(TableNames::new(&format!("idem_bench_rec_{}", env.ns))?
        .fences(&format!("idem_bench_fen_{}", env.ns))?)
}

/// The store and the hand-written side's pool (the same pool) and statements.
struct Setup {
    idem: idem::Idem,
    pool: Pool,
    /// `[select_live, claim, next_fence, complete]`.
    sql: Arc<[Arc<str>; 4]>,
}

async fn setup(env: &Env, db: Db) -> anyhow::Result<Setup> {
    let pool = Pool::connect(env, db, 16).await?;
    let store = match &pool {
        Pool::Pg(p) => SqlStore::postgres(p.clone()),
        Pool::My(p) => SqlStore::mysql(p.clone()),
    }
    .with_tables(names(env)?);
    store.migrate().await?;
    let sql = Arc::new(store.__bench_statements());
    let idem = idem::Idem::builder()
        .store(store)
        .namespace(env.ns.clone())
        .build()?;
    Ok(Setup { idem, pool, sql })
}

/// The store's handle alone (the `#[idempotent]` rows).
pub(crate) async fn handle(env: &Env, db: Db) -> anyhow::Result<idem::Idem> {
    Ok(setup(env, db).await?.idem)
}

fn key(ns: &str, a: impl std::fmt::Display, b: impl std::fmt::Display) -> String {
    format!("{ns}:order-create:{a}:{b}")
}

pub(crate) fn framed(value: &str) -> anyhow::Result<Vec<u8>> {
    let mut payload = Vec::with_capacity(64);
    payload.extend_from_slice(b"I1");
    payload.extend_from_slice(&0u32.to_le_bytes());
    payload.push(0);
    serde_json::to_writer(&mut payload, value)?;
    Ok(payload)
}

pub(crate) fn owner() -> [u8; 16] {
    idem::store::Owner::fresh().to_bytes()
}

/// Reads a record row the way the stores do (every column) and decodes a
/// finished one's result.
fn read_done(row: &impl RowLike) -> anyhow::Result<String> {
    let (state, payload) = row.state_payload()?;
    anyhow::ensure!(state == 1, "expected a finished record, state {state}");
    let payload = payload.ok_or_else(|| anyhow::anyhow!("finished record without payload"))?;
    anyhow::ensure!(payload.len() >= 7 && &payload[..2] == b"I1");
    Ok(serde_json::from_slice(&payload[7..])?)
}

trait RowLike {
    fn state_payload(&self) -> anyhow::Result<(i16, Option<Vec<u8>>)>;
}

macro_rules! row_like {
    ($t:ty) => {
        impl RowLike for $t {
            fn state_payload(&self) -> anyhow::Result<(i16, Option<Vec<u8>>)> {
                let state: i16 = self.try_get("state")?;
                let _owner: Vec<u8> = self.try_get("owner")?;
                let _fence: i64 = self.try_get("fence")?;
                let _fp: Vec<u8> = self.try_get("fingerprint")?;
                let _rem: i64 = self.try_get("remaining_us")?;
                Ok((state, self.try_get("payload")?))
            }
        }
    };
}
row_like!(sqlx::postgres::PgRow);
row_like!(sqlx::mysql::MySqlRow);

pub(crate) async fn duplicate(env: &Env, db: Db) -> anyhow::Result<Vec<Side>> {
    let Setup { idem, pool, sql } = setup(env, db).await?;
    for k in 0..DUP_KEYS {
        idem.guard("order-create", &[&"dup", &k])
            .lease(LEASE)
            .ttl(TTL)
            .run(|| async { Ok::<_, idem::Error>(result()) })
            .await?;
    }
    let a = guarded_replay(idem, DUP_KEYS, TTL, LEASE);
    let ns: Arc<str> = env.ns.as_str().into();
    let b = op(move |i| {
        let (pool, sql, ns) = (pool.clone(), Arc::clone(&sql), Arc::clone(&ns));
        async move {
            let k = key(&ns, "dup", i % DUP_KEYS);
            let s = match &pool {
                Pool::Pg(p) => {
                    let row = sqlx::query(AssertSqlSafe(Arc::clone(&sql[1])))
                        .bind(k.as_str())
                        .bind(&owner()[..])
                        .bind(&[0u8; 16][..])
                        .bind(LEASE.as_micros() as i64)
                        .fetch_optional(p)
                        .await?
                        .ok_or_else(|| anyhow::anyhow!("claim returned no row"))?;
                    let claimed: bool = row.try_get("claimed")?;
                    anyhow::ensure!(!claimed, "duplicate claimed the key");
                    read_done(&row)?
                }
                Pool::My(p) => {
                    let row = sqlx::query(AssertSqlSafe(Arc::clone(&sql[0])))
                        .bind(k.as_str())
                        .fetch_optional(p)
                        .await?
                        .ok_or_else(|| anyhow::anyhow!("no live row"))?;
                    read_done(&row)?
                }
            };
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
            name: "B same statements by hand",
            op: b,
        },
    ])
}

pub(crate) async fn first(env: &Env, db: Db) -> anyhow::Result<Vec<Side>> {
    let Setup { idem, pool, sql } = setup(env, db).await?;
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
            anyhow::ensure!(!out.is_replay(), "expected a first call");
            black_box(out.into_inner());
            Ok(())
        }
    });
    let ns: Arc<str> = env.ns.as_str().into();
    let tag: Arc<str> = format!("{}b", env.tag).into();
    let b = op(move |i| {
        let (pool, sql, ns, tag) = (
            pool.clone(),
            Arc::clone(&sql),
            Arc::clone(&ns),
            Arc::clone(&tag),
        );
        async move {
            let k = key(&ns, &tag, i);
            let o = owner();
            let value = black_box(result());
            let complete = |payload: Vec<u8>| {
                (
                    payload,
                    TTL.as_micros() as i64,
                    AssertSqlSafe(Arc::clone(&sql[3])),
                )
            };
            match &pool {
                Pool::Pg(p) => {
                    let row = sqlx::query(AssertSqlSafe(Arc::clone(&sql[1])))
                        .bind(k.as_str())
                        .bind(&o[..])
                        .bind(&[0u8; 16][..])
                        .bind(LEASE.as_micros() as i64)
                        .fetch_optional(p)
                        .await?
                        .ok_or_else(|| anyhow::anyhow!("claim returned no row"))?;
                    let claimed: bool = row.try_get("claimed")?;
                    let fence: i64 = row.try_get("fence")?;
                    anyhow::ensure!(claimed && fence > 0, "first call did not claim");
                    let (payload, ttl, stmt) = complete(framed(&value)?);
                    let n = sqlx::query(stmt)
                        .bind(payload)
                        .bind(ttl)
                        .bind(k.as_str())
                        .bind(&o[..])
                        .execute(p)
                        .await?
                        .rows_affected();
                    anyhow::ensure!(n == 1, "complete changed {n} rows");
                }
                Pool::My(p) => {
                    let live = sqlx::query(AssertSqlSafe(Arc::clone(&sql[0])))
                        .bind(k.as_str())
                        .fetch_optional(p)
                        .await?;
                    anyhow::ensure!(live.is_none(), "key exists");
                    let mut tx = p.begin().await?;
                    let fence = sqlx::query(AssertSqlSafe(Arc::clone(&sql[2])))
                        .bind((i % 64) as i64)
                        .execute(&mut *tx)
                        .await?
                        .last_insert_id() as i64;
                    let r = sqlx::query(AssertSqlSafe(Arc::clone(&sql[1])))
                        .bind(k.as_str())
                        .bind(&o[..])
                        .bind(fence)
                        .bind(&[0u8; 16][..])
                        .bind(LEASE.as_micros() as i64)
                        .execute(&mut *tx)
                        .await?;
                    tx.commit().await?;
                    anyhow::ensure!(r.last_insert_id() == fence as u64, "claim lost");
                    let (payload, ttl, stmt) = complete(framed(&value)?);
                    let n = sqlx::query(stmt)
                        .bind(payload)
                        .bind(ttl)
                        .bind(k.as_str())
                        .bind(&o[..])
                        .execute(p)
                        .await?
                        .rows_affected();
                    anyhow::ensure!(n == 1, "complete changed {n} rows");
                }
            }
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
            name: "B same statements by hand",
            op: b,
        },
    ])
}

/// Drops every table `migrate` created (records, tokens, consume log, outbox,
/// fences; PostgreSQL: the fence sequence).
pub(crate) async fn cleanup(env: &Env) -> anyhow::Result<()> {
    let n = names(env)?;
    for db in [Db::Postgres, Db::MySql] {
        let pool = Pool::connect(env, db, 1).await?;
        let order_locks = format!("{}_order_locks", n.outbox_name());
        for t in [
            n.records_name(),
            n.tokens_name(),
            n.consume_log_name(),
            n.outbox_name(),
            &order_locks,
        ] {
            pool.exec(&format!("DROP TABLE IF EXISTS {t}")).await?;
        }
        match db {
            Db::Postgres => {
                pool.exec(&format!("DROP SEQUENCE IF EXISTS {}", n.fences_name()))
                    .await?
            }
            Db::MySql => {
                pool.exec(&format!("DROP TABLE IF EXISTS {}", n.fences_name()))
                    .await?
            }
        }
    }
    Ok(())
}
