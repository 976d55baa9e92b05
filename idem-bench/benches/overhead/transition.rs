//! `#[state_transition]` on PostgreSQL: one transition per call, each in its
//! own transaction (`BEGIN`, the transition, `COMMIT`).
//!
//! - A: the attribute (a savepoint, the conditional `UPDATE … WHERE key = $2
//!   AND status IN ($3)`; the savepoint is left to the transaction's end):
//!   4 statements with `BEGIN` and `COMMIT`;
//! - B: the native floor: the raw `UPDATE … WHERE order_no = $2 AND status =
//!   $3` in a transaction, one row checked: 3 statements.
//!
//! The rows toggle between two states (`OPEN -> CLOSED -> OPEN …`): call `i`
//! moves row `i % ROWS` in the direction of its pass `i / ROWS`, so a row
//! is moved again only `ROWS` calls later. The attribute needs its table as
//! a literal: the table is `idem_bench_order` (keys carry the run's
//! namespace; dropped at the end).

use std::sync::Arc;

use sqlx::AssertSqlSafe;

use crate::Env;
use crate::harness::{Side, op};
use crate::redis::sides;
use crate::sql::{Db, Pool};

/// Rows per side.
const ROWS: u64 = 10_000;
const TABLE: &str = "idem_bench_order";

#[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
#[state_machine(edges(Open -> Closed, Closed -> Open))]
enum Door {
    Open,
    Closed,
}

type Tx<'c> = sqlx::Transaction<'c, sqlx::Postgres>;

#[idem::state_transition(machine = Door, from = Open, to = Closed, table = "idem_bench_order",
    key = order_no, key_column = "order_no")]
async fn close(tx: &mut Tx<'_>, order_no: &str) -> Result<idem::Transition<()>, idem::Error> {
    Ok(())
}

#[idem::state_transition(machine = Door, from = Closed, to = Open, table = "idem_bench_order",
    key = order_no, key_column = "order_no")]
async fn open(tx: &mut Tx<'_>, order_no: &str) -> Result<idem::Transition<()>, idem::Error> {
    Ok(())
}

/// Row `i % ROWS` of `side`, and whether call `i` closes it (else opens it).
fn row(ns: &str, side: &str, i: u64) -> (String, bool) {
    (
        format!("{ns}-{side}-{}", i % ROWS),
        (i / ROWS).is_multiple_of(2),
    )
}

pub(crate) async fn transition(env: &Env) -> anyhow::Result<Vec<Side>> {
    let pool = Pool::connect(env, Db::Postgres, 16).await?;
    let Pool::Pg(pg) = pool.clone() else {
        anyhow::bail!("expected a PostgreSQL pool")
    };
    pool.exec(&format!(
        "CREATE TABLE IF NOT EXISTS {TABLE} (order_no TEXT PRIMARY KEY, status TEXT NOT NULL)"
    ))
    .await?;
    let tag = format!("{}{}", env.ns, env.tag);
    for side in ["a", "b"] {
        pool.exec(&format!(
            "INSERT INTO {TABLE} (order_no, status) SELECT '{tag}-{side}-' || n, 'OPEN' \
             FROM generate_series(0, {}) AS n",
            ROWS - 1
        ))
        .await?;
    }
    let tag: Arc<str> = tag.into();
    let a = {
        let (pg, tag) = (pg.clone(), Arc::clone(&tag));
        op(move |i| {
            let (pg, tag) = (pg.clone(), Arc::clone(&tag));
            async move {
                let (key, closing) = row(&tag, "a", i);
                let mut tx = pg.begin().await?;
                let t = if closing {
                    close(&mut tx, &key).await?
                } else {
                    open(&mut tx, &key).await?
                };
                anyhow::ensure!(matches!(t, idem::Transition::Applied(())), "{key}: {t:?}");
                tx.commit().await?;
                Ok(())
            }
        })
    };
    let update: Arc<str> =
        format!("UPDATE {TABLE} SET status = $1 WHERE order_no = $2 AND status = $3").into();
    let b = op(move |i| {
        let (pg, tag, update) = (pg.clone(), Arc::clone(&tag), Arc::clone(&update));
        async move {
            let (key, closing) = row(&tag, "b", i);
            let (from, to) = if closing {
                ("OPEN", "CLOSED")
            } else {
                ("CLOSED", "OPEN")
            };
            let mut tx = pg.begin().await?;
            let n = sqlx::query(AssertSqlSafe(update))
                .bind(to)
                .bind(&key)
                .bind(from)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            anyhow::ensure!(n == 1, "{key}: the update matched {n} rows");
            tx.commit().await?;
            Ok(())
        }
    });
    Ok(sides(
        [a, b],
        [
            "A #[state_transition] (savepoint + UPDATE)",
            "B native floor: UPDATE … WHERE status = $from by hand",
        ],
    ))
}

pub(crate) async fn cleanup(env: &Env) -> anyhow::Result<()> {
    let pool = Pool::connect(env, Db::Postgres, 1).await?;
    pool.exec(&format!("DROP TABLE IF EXISTS {TABLE}")).await?;
    Ok(())
}
