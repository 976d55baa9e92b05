//! The transactional guard on PostgreSQL: a first call per key, the record
//! written in the caller's transaction (`BEGIN`, the guard, `COMMIT`), the
//! same 200-character result stored on both sides.
//!
//! - A: `idem.guard(..).in_tx(&mut tx).run(body)` (a savepoint, the store's
//!   one-statement claim, the complete `UPDATE`; the savepoint is left to the
//!   transaction's end): 5 statements with `BEGIN` and `COMMIT`;
//! - B: the native floor: one raw `INSERT` of the finished record into the
//!   same table in the transaction: 3 statements (no claim, so no waiting
//!   duplicate and no fence from the sequence).
//!
//! The table is the SQL store rows' (`sqlstore::names`), dropped with them.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use idem::store::sql::SqlStore;
use sqlx::AssertSqlSafe;

use crate::Env;
use crate::harness::{Side, op};
use crate::redis::{result, sides};
use crate::sql::{Db, Pool};
use crate::sqlstore::{framed, names, owner};

const LEASE: Duration = Duration::from_secs(5);
const TTL: Duration = Duration::from_secs(3_600);

pub(crate) async fn first(env: &Env) -> anyhow::Result<Vec<Side>> {
    let Pool::Pg(pg) = Pool::connect(env, Db::Postgres, 16).await? else {
        anyhow::bail!("expected a PostgreSQL pool")
    };
    let names = names(env)?;
    let store = SqlStore::postgres(pg.clone()).with_tables(names.clone());
    store.migrate().await?;
    // The SQL store is no front: the guard reads and writes the table only.
    let idem = idem::Idem::builder()
        .store(store)
        .tx_tables(names.clone())
        .namespace(env.ns.clone())
        .build()?;
    let tag: Arc<str> = format!("{}a", env.tag).into();
    let a = {
        let pg = pg.clone();
        op(move |i| {
            let (idem, pg, tag) = (idem.clone(), pg.clone(), Arc::clone(&tag));
            async move {
                let mut tx = pg.begin().await?;
                let out = idem
                    .guard("order-tx", &[&&*tag, &i])
                    .lease(LEASE)
                    .ttl(TTL)
                    .in_tx(&mut tx)
                    .run(|_tx, _fence| Box::pin(async { Ok::<_, idem::Error>(result()) }))
                    .await?;
                anyhow::ensure!(!out.is_replay(), "expected a first call");
                black_box(out.into_inner());
                tx.commit().await?;
                Ok(())
            }
        })
    };
    let insert: Arc<str> = format!(
        "INSERT INTO {} (idem_key, state, owner, fence, fingerprint, payload, expires_at) \
         VALUES ($1, 1, $2, $3, $4, $5, statement_timestamp() + ($6::INT8 * INTERVAL '1 microsecond'))",
        names.records_name()
    )
    .into();
    let head: Arc<str> = format!("{}:order-tx:{}b:", env.ns, env.tag).into();
    let b = op(move |i| {
        let (pg, insert, head) = (pg.clone(), Arc::clone(&insert), Arc::clone(&head));
        async move {
            let value = black_box(result());
            let mut tx = pg.begin().await?;
            let n = sqlx::query(AssertSqlSafe(insert))
                .bind(format!("{head}{i}"))
                .bind(&owner()[..])
                .bind(i as i64)
                .bind(&[0u8; 16][..])
                .bind(framed(&value)?)
                .bind(TTL.as_micros() as i64)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            anyhow::ensure!(n == 1, "the insert wrote {n} rows");
            tx.commit().await?;
            Ok(())
        }
    });
    Ok(sides(
        [a, b],
        [
            "A idem guard in_tx (savepoint, claim, complete)",
            "B native floor: INSERT of the record in the transaction",
        ],
    ))
}
