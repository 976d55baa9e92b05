//! The business table of the backstop tests: `orders` with a unique order
//! number, next to a SQL fixture's idem tables and dropped with them.

use std::time::Duration;

use idem::db::Dialect;

use super::sql::{Cleanup, Fixture, mysql_url, pg_url, suffix};

/// A business table `orders(id, order_no UNIQUE via uk_orders_<sfx>)` on the
/// fixture's database, for backstop tests.
#[derive(Debug, Clone)]
pub(crate) struct Biz {
    pub(crate) pool: BizPool,
    pub(crate) table: String,
    pub(crate) index: String,
}

#[derive(Debug, Clone)]
pub(crate) enum BizPool {
    Pg(sqlx::PgPool),
    My(sqlx::MySqlPool),
    Lite(sqlx::SqlitePool),
}

impl Biz {
    /// Creates the table next to the fixture's idem tables (dropped with them).
    pub(crate) async fn new(fx: &Fixture) -> Biz {
        let sfx = suffix();
        let index = format!("uk_orders_{sfx}");
        match fx.dialect {
            Dialect::Postgres => {
                let schema = fx.names.schema_name().unwrap().to_owned();
                let table = format!("{schema}.orders");
                let pool = sqlx::postgres::PgPoolOptions::new()
                    .max_connections(2)
                    .test_before_acquire(false)
                    .connect(&pg_url())
                    .await
                    .unwrap();
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "CREATE TABLE {table} (id BIGSERIAL PRIMARY KEY, order_no TEXT NOT NULL, amount BIGINT NOT NULL DEFAULT 0);
                     CREATE UNIQUE INDEX {index} ON {table} (order_no)"
                )))
                .execute(&pool)
                .await
                .unwrap();
                Biz {
                    pool: BizPool::Pg(pool),
                    table,
                    index,
                }
            }
            Dialect::MySql => {
                let table = format!("{}_orders", fx.names.records_name());
                let pool = sqlx::mysql::MySqlPoolOptions::new()
                    .max_connections(2)
                    .test_before_acquire(false)
                    .connect(&mysql_url())
                    .await
                    .unwrap();
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "CREATE TABLE {table} (id BIGINT AUTO_INCREMENT PRIMARY KEY, order_no VARCHAR(200) NOT NULL, \
                     amount BIGINT NOT NULL DEFAULT 0, UNIQUE KEY {index} (order_no)) ENGINE=InnoDB"
                )))
                .execute(&pool)
                .await
                .unwrap();
                Biz {
                    pool: BizPool::My(pool),
                    table,
                    index,
                }
            }
            _ => {
                let Some(Cleanup::Lite(dir)) = &fx.cleanup else {
                    unreachable!()
                };
                let opts = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(dir.path().join("biz.db"))
                    .create_if_missing(true)
                    .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                    .busy_timeout(Duration::from_secs(10));
                let pool = sqlx::sqlite::SqlitePoolOptions::new()
                    .max_connections(2)
                    .test_before_acquire(false)
                    .connect_with(opts)
                    .await
                    .unwrap();
                let table = "orders".to_owned();
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "CREATE TABLE {table} (id INTEGER PRIMARY KEY AUTOINCREMENT, order_no TEXT NOT NULL, amount INTEGER NOT NULL DEFAULT 0);
                     CREATE UNIQUE INDEX {index} ON {table} (order_no)"
                )))
                .execute(&pool)
                .await
                .unwrap();
                Biz {
                    pool: BizPool::Lite(pool),
                    table,
                    index,
                }
            }
        }
    }

    /// Inserts an order; a second insert of one order number is a unique violation.
    pub(crate) async fn insert(&self, order_no: &str) -> Result<i64, sqlx::Error> {
        let t = &self.table;
        match &self.pool {
            BizPool::Pg(p) => {
                sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                    "INSERT INTO {t} (order_no) VALUES ($1) RETURNING id"
                )))
                .bind(order_no)
                .fetch_one(p)
                .await
            }
            BizPool::My(p) => {
                let r = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "INSERT INTO {t} (order_no) VALUES (?)"
                )))
                .bind(order_no)
                .execute(p)
                .await?;
                Ok(r.last_insert_id() as i64)
            }
            BizPool::Lite(p) => {
                sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                    "INSERT INTO {t} (order_no) VALUES (?1) RETURNING id"
                )))
                .bind(order_no)
                .fetch_one(p)
                .await
            }
        }
    }

    /// The id of an existing order.
    pub(crate) async fn find(&self, order_no: &str) -> Result<i64, sqlx::Error> {
        let t = &self.table;
        let sql = sqlx::AssertSqlSafe(match &self.pool {
            BizPool::Pg(_) => format!("SELECT id FROM {t} WHERE order_no = $1"),
            _ => format!("SELECT id FROM {t} WHERE order_no = ?"),
        });
        match &self.pool {
            BizPool::Pg(p) => sqlx::query_scalar(sql).bind(order_no).fetch_one(p).await,
            BizPool::My(p) => sqlx::query_scalar(sql).bind(order_no).fetch_one(p).await,
            BizPool::Lite(p) => sqlx::query_scalar(sql).bind(order_no).fetch_one(p).await,
        }
    }

    /// Rows in the table (all orders).
    pub(crate) async fn count(&self) -> i64 {
        let sql = sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {}", self.table));
        match &self.pool {
            BizPool::Pg(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
            BizPool::My(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
            BizPool::Lite(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
        }
    }

    /// Order numbers with more than one row.
    pub(crate) async fn duplicates(&self) -> i64 {
        let sql = sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM (SELECT order_no FROM {} GROUP BY order_no HAVING COUNT(*) > 1) d",
            self.table
        ));
        match &self.pool {
            BizPool::Pg(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
            BizPool::My(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
            BizPool::Lite(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
        }
    }

    /// The constraint catalog of this database.
    pub(crate) fn catalog(&self) -> idem::sql::SqlConstraints {
        match &self.pool {
            BizPool::Pg(p) => idem::sql::SqlConstraints::postgres(p.clone()),
            BizPool::My(p) => idem::sql::SqlConstraints::mysql(p.clone()),
            BizPool::Lite(p) => idem::sql::SqlConstraints::sqlite(p.clone()),
        }
    }
}
