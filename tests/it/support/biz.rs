//! The business table of the backstop tests: `orders` with a unique order
//! number, next to a SQL fixture's idem tables and dropped with them.

use idem::db::Dialect;

use super::sql::{Fixture, connect_mysql, connect_pg, pg_url, suffix};

/// A business table `orders(id, order_no UNIQUE via uk_orders_<sfx>)` on the
/// fixture's database, for backstop tests.
#[derive(Debug, Clone)]
pub(crate) struct Biz {
    pub(crate) pool: BizPool,
    pub(crate) table: String,
    pub(crate) index: String,
}

/// The pool of the business table's database.
pub(crate) type BizPool = super::fresh::Pool;

impl Biz {
    /// Creates the table next to the fixture's idem tables (dropped with them).
    pub(crate) async fn new(fx: &Fixture) -> Biz {
        let index = format!("uk_orders_{}", suffix());
        let (pool, table, create) = match fx.dialect {
            Dialect::Postgres => {
                let table = format!("{}.orders", fx.names.schema_name().unwrap());
                let create = format!(
                    "CREATE TABLE {table} (id BIGSERIAL PRIMARY KEY, order_no TEXT NOT NULL, amount BIGINT NOT NULL DEFAULT 0);
                     CREATE UNIQUE INDEX {index} ON {table} (order_no)"
                );
                (BizPool::Pg(connect_pg(&pg_url(), 2).await), table, create)
            }
            Dialect::MySql => {
                let table = format!("{}_orders", fx.names.records_name());
                let create = format!(
                    "CREATE TABLE {table} (id BIGINT AUTO_INCREMENT PRIMARY KEY, order_no VARCHAR(200) NOT NULL, \
                     amount BIGINT NOT NULL DEFAULT 0, UNIQUE KEY {index} (order_no)) ENGINE=InnoDB"
                );
                (
                    BizPool::My(connect_mysql(&fx.db.url(), 2).await),
                    table,
                    create,
                )
            }
            _ => {
                let table = "orders".to_owned();
                let create = format!(
                    "CREATE TABLE {table} (id INTEGER PRIMARY KEY AUTOINCREMENT, order_no TEXT NOT NULL, amount INTEGER NOT NULL DEFAULT 0);
                     CREATE UNIQUE INDEX {index} ON {table} (order_no)"
                );
                (
                    BizPool::Lite(fx.db.sqlite("biz.db", 2).await),
                    table,
                    create,
                )
            }
        };
        pool.exec(&create).await;
        Biz { pool, table, index }
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
