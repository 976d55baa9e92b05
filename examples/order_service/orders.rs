//! The example's orders table (unique on the order number: the backstop) on
//! whichever database `DATABASE_URL` names, and the pool it is reached by.

use std::time::Duration;

use idem::sql::SqlConstraints;
use sqlx::AssertSqlSafe;

/// The orders table on whichever database the URL names.
#[derive(Clone)]
pub(crate) enum Db {
    Pg(sqlx::PgPool),
    My(sqlx::MySqlPool),
    Lite(sqlx::SqlitePool),
}

/// Runs `$e` with `$p` bound to the pool, whatever the database.
macro_rules! on {
    ($db:expr, |$p:ident| $e:expr) => {
        match $db {
            Db::Pg($p) => $e,
            Db::My($p) => $e,
            Db::Lite($p) => $e,
        }
    };
}

pub(crate) struct Orders {
    db: Db,
    pub(crate) table: String,
    /// The unique index on the order number: the guard's backstop.
    pub(crate) index: String,
}

impl Orders {
    pub(crate) async fn create(db: Db, run: &str) -> Result<Orders, sqlx::Error> {
        let (table, index) = (
            format!("example_orders_{run}"),
            format!("uk_example_order_no_{run}"),
        );
        let ddl = match &db {
            Db::Pg(_) => {
                format!("CREATE TABLE {table} (id BIGSERIAL PRIMARY KEY, order_no TEXT NOT NULL)")
            }
            Db::My(_) => format!(
                "CREATE TABLE {table} (id BIGINT AUTO_INCREMENT PRIMARY KEY, order_no VARCHAR(100) NOT NULL)"
            ),
            Db::Lite(_) => format!(
                "CREATE TABLE {table} (id INTEGER PRIMARY KEY AUTOINCREMENT, order_no TEXT NOT NULL)"
            ),
        };
        let uk = format!("CREATE UNIQUE INDEX {index} ON {table} (order_no)");
        on!(&db, |p| {
            sqlx::query(AssertSqlSafe(ddl)).execute(p).await?;
            sqlx::query(AssertSqlSafe(uk)).execute(p).await?;
        });
        Ok(Orders { db, table, index })
    }

    pub(crate) async fn insert(&self, order_no: &str) -> Result<i64, sqlx::Error> {
        let t = &self.table;
        match &self.db {
            Db::Pg(p) => {
                let sql = format!("INSERT INTO {t} (order_no) VALUES ($1) RETURNING id");
                sqlx::query_scalar(AssertSqlSafe(sql))
                    .bind(order_no)
                    .fetch_one(p)
                    .await
            }
            Db::My(p) => {
                let sql = format!("INSERT INTO {t} (order_no) VALUES (?)");
                let r = sqlx::query(AssertSqlSafe(sql))
                    .bind(order_no)
                    .execute(p)
                    .await?;
                Ok(r.last_insert_id() as i64)
            }
            Db::Lite(p) => {
                let sql = format!("INSERT INTO {t} (order_no) VALUES (?) RETURNING id");
                sqlx::query_scalar(AssertSqlSafe(sql))
                    .bind(order_no)
                    .fetch_one(p)
                    .await
            }
        }
    }

    /// `on_conflict`: the existing order (on a fresh connection from the pool).
    pub(crate) async fn find(&self, order_no: &str) -> Result<i64, sqlx::Error> {
        let p = if matches!(self.db, Db::Pg(_)) {
            "$1"
        } else {
            "?"
        };
        let sql = AssertSqlSafe(format!(
            "SELECT id FROM {} WHERE order_no = {p}",
            self.table
        ));
        on!(&self.db, |pool| sqlx::query_scalar(sql)
            .bind(order_no)
            .fetch_one(pool)
            .await)
    }

    pub(crate) async fn rows(&self, order_no: &str) -> Result<i64, sqlx::Error> {
        let p = if matches!(self.db, Db::Pg(_)) {
            "$1"
        } else {
            "?"
        };
        let sql = AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM {} WHERE order_no = {p}",
            self.table
        ));
        on!(&self.db, |pool| sqlx::query_scalar(sql)
            .bind(order_no)
            .fetch_one(pool)
            .await)
    }

    pub(crate) async fn drop_table(&self) -> Result<(), sqlx::Error> {
        let sql = AssertSqlSafe(format!("DROP TABLE {}", self.table));
        on!(&self.db, |p| sqlx::query(sql).execute(p).await.map(drop))
    }

    pub(crate) fn catalog(&self) -> SqlConstraints {
        match &self.db {
            Db::Pg(p) => SqlConstraints::postgres(p.clone()),
            Db::My(p) => SqlConstraints::mysql(p.clone()),
            Db::Lite(p) => SqlConstraints::sqlite(p.clone()),
        }
    }
}

/// A pool on the database `url` names.
pub(crate) async fn connect(url: &str) -> Result<Db, sqlx::Error> {
    // Each pool turns off the ping on acquire (see the `idem::sql` docs).
    Ok(match url.split(':').next().unwrap_or("") {
        "postgres" | "postgresql" => Db::Pg(
            sqlx::postgres::PgPoolOptions::new()
                .test_before_acquire(false)
                .max_connections(8)
                .connect(url)
                .await?,
        ),
        "mysql" | "mariadb" => Db::My(
            sqlx::mysql::MySqlPoolOptions::new()
                .test_before_acquire(false)
                .max_connections(8)
                .connect(&url.replacen("mariadb:", "mysql:", 1))
                .await?,
        ),
        _ => {
            let opts: sqlx::sqlite::SqliteConnectOptions = url.parse()?;
            let opts = opts
                .create_if_missing(true)
                .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                .busy_timeout(Duration::from_secs(5));
            Db::Lite(
                sqlx::sqlite::SqlitePoolOptions::new()
                    .test_before_acquire(false)
                    .max_connections(4)
                    .connect_with(opts)
                    .await?,
            )
        }
    })
}
