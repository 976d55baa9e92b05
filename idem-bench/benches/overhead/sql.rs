//! SQL: the backstop path (a unique violation on a business table, then the
//! `on_conflict` lookup) against the same insert + select by hand.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use sqlx::AssertSqlSafe;
use sqlx::mysql::{MySqlPool, MySqlPoolOptions};
use sqlx::postgres::{PgPool, PgPoolOptions};

use crate::Env;
use crate::harness::{Side, op};
use crate::redis::result;

/// Rows already in the business table: every insert of the scenario collides.
const ORDERS: u64 = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Db {
    Postgres,
    MySql,
}

impl Db {
    pub(crate) fn id(self) -> &'static str {
        match self {
            Db::Postgres => "pg",
            Db::MySql => "mysql",
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Db::Postgres => "PostgreSQL",
            Db::MySql => "MariaDB",
        }
    }
}

/// One pool of either kind, without the ping on acquire (`test_before_acquire`).
#[derive(Clone, Debug)]
pub(crate) enum Pool {
    Pg(PgPool),
    My(MySqlPool),
}

impl Pool {
    pub(crate) async fn connect(env: &Env, db: Db, size: u32) -> anyhow::Result<Pool> {
        let acquire = Duration::from_secs(5);
        Ok(match db {
            Db::Postgres => Pool::Pg(
                PgPoolOptions::new()
                    .max_connections(size)
                    .acquire_timeout(acquire)
                    .test_before_acquire(false)
                    .connect(&env.pg_url)
                    .await
                    .map_err(|e| {
                        anyhow::anyhow!("PostgreSQL at {} is required: {e}", env.pg_url)
                    })?,
            ),
            Db::MySql => Pool::My(
                MySqlPoolOptions::new()
                    .max_connections(size)
                    .acquire_timeout(acquire)
                    .test_before_acquire(false)
                    .connect(&env.mysql_url)
                    .await
                    .map_err(|e| {
                        anyhow::anyhow!("MariaDB at {} is required: {e}", env.mysql_url)
                    })?,
            ),
        })
    }

    pub(crate) async fn exec(&self, sql: &str) -> Result<(), sqlx::Error> {
        let sql = AssertSqlSafe(sql.to_owned());
        match self {
            Pool::Pg(p) => sqlx::raw_sql(sql).execute(p).await.map(drop),
            Pool::My(p) => sqlx::raw_sql(sql).execute(p).await.map(drop),
        }
    }
}

/// The business table's two statements, rendered once.
#[derive(Clone, Debug)]
struct Orders {
    pool: Pool,
    insert: Arc<str>,
    select: Arc<str>,
}

impl Orders {
    fn new(pool: Pool, table: &str) -> Self {
        let (insert, select) = match pool {
            Pool::Pg(_) => (
                format!("INSERT INTO {table} (order_no, payload) VALUES ($1, $2)"),
                format!("SELECT payload FROM {table} WHERE order_no = $1"),
            ),
            Pool::My(_) => (
                format!("INSERT INTO {table} (order_no, payload) VALUES (?, ?)"),
                format!("SELECT payload FROM {table} WHERE order_no = ?"),
            ),
        };
        Orders {
            pool,
            insert: insert.into(),
            select: select.into(),
        }
    }

    async fn insert(&self, order_no: &str, payload: &str) -> Result<(), sqlx::Error> {
        let sql = AssertSqlSafe(Arc::clone(&self.insert));
        match &self.pool {
            Pool::Pg(p) => sqlx::query(sql)
                .bind(order_no)
                .bind(payload)
                .execute(p)
                .await
                .map(drop),
            Pool::My(p) => sqlx::query(sql)
                .bind(order_no)
                .bind(payload)
                .execute(p)
                .await
                .map(drop),
        }
    }

    async fn select(&self, order_no: &str) -> Result<String, sqlx::Error> {
        let sql = AssertSqlSafe(Arc::clone(&self.select));
        match &self.pool {
            Pool::Pg(p) => sqlx::query_scalar(sql).bind(order_no).fetch_one(p).await,
            Pool::My(p) => sqlx::query_scalar(sql).bind(order_no).fetch_one(p).await,
        }
    }
}

/// The business error of the guarded function.
#[derive(Debug, thiserror::Error)]
enum BizError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
}

fn table(env: &Env) -> String {
    format!("idem_bench_orders_{}", env.ns)
}

fn constraint(env: &Env) -> String {
    format!("uk_{}", env.ns)
}

/// A: a guarded call whose key is new to the record store (memory) but whose order
/// already exists: the insert violates the backstop, `on_conflict` selects the row,
/// the result is stored and returned as a backstop replay.
/// B: the same insert, its unique violation recognised, and the same select.
pub(crate) async fn backstop(env: &Env, db: Db) -> anyhow::Result<Vec<Side>> {
    let pool = Pool::connect(env, db, 8).await?;
    let t = table(env);
    let uk = constraint(env);
    pool.exec(&format!("DROP TABLE IF EXISTS {t}")).await?;
    pool.exec(&match db {
        Db::Postgres => format!(
            "CREATE TABLE {t} (id BIGSERIAL PRIMARY KEY, order_no TEXT NOT NULL, \
             payload TEXT NOT NULL, CONSTRAINT {uk} UNIQUE (order_no))"
        ),
        Db::MySql => format!(
            "CREATE TABLE {t} (id BIGINT AUTO_INCREMENT PRIMARY KEY, order_no VARCHAR(64) NOT NULL, \
             payload TEXT NOT NULL, UNIQUE KEY {uk} (order_no)) ENGINE=InnoDB"
        ),
    })
    .await?;
    let orders = Orders::new(pool, &t);
    for n in 0..ORDERS {
        orders.insert(&format!("o-{n}"), &result()).await?;
    }
    let idem = idem::Idem::builder()
        .store(idem::MemoryStore::new())
        .namespace(env.ns.clone())
        .build()?;
    let tag = format!("{}{}", env.tag, db.id());
    let a = {
        let orders = orders.clone();
        op(move |i| {
            let (idem, orders, tag, uk) = (idem.clone(), orders.clone(), tag.clone(), uk.clone());
            async move {
                let order_no = format!("o-{}", i % ORDERS);
                let hooks = idem::Hooks::new()
                    .detect(idem::std_error)
                    .on_conflict(|| async { Ok::<_, BizError>(orders.select(&order_no).await?) });
                let out = idem
                    .guard("order-create", &[&tag, &i])
                    .backstop(uk)
                    .run_with(hooks, || async {
                        let payload = result();
                        orders.insert(&order_no, &payload).await?;
                        Ok::<_, BizError>(payload)
                    })
                    .await?;
                anyhow::ensure!(out.how() == idem::How::Backstop, "{:?}", out.how());
                black_box(out.into_inner());
                Ok(())
            }
        })
    };
    let b = op(move |i| {
        let orders = orders.clone();
        async move {
            let order_no = format!("o-{}", i % ORDERS);
            let payload = result();
            match orders.insert(&order_no, &payload).await {
                Err(e)
                    if e.as_database_error()
                        .is_some_and(|d| d.is_unique_violation()) => {}
                other => anyhow::bail!("expected a unique violation, got {other:?}"),
            }
            let existing = orders.select(&order_no).await?;
            black_box(existing);
            Ok(())
        }
    });
    Ok(vec![
        Side {
            name: "A idem (memory store)",
            op: a,
        },
        Side {
            name: "B insert + select by hand",
            op: b,
        },
    ])
}

/// Drops the tables this run created.
pub(crate) async fn cleanup(env: &Env) -> anyhow::Result<()> {
    for db in [Db::Postgres, Db::MySql] {
        let pool = Pool::connect(env, db, 1).await?;
        pool.exec(&format!("DROP TABLE IF EXISTS {}", table(env)))
            .await?;
    }
    Ok(())
}
