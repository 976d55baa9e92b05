//! Fixtures for the consume log tests: a fresh PostgreSQL schema (as the
//! connections' `search_path`), a fresh MariaDB database, or a SQLite temp
//! file, holding idem's tables (`migrate()`, so the default
//! `idem_consume_log` too) and a business table `refunds` with no unique key
//! of its own, so only the consume log can stop a duplicate effect. Dropped
//! with the fixture; a missing server fails the test loudly.

use std::str::FromStr as _;
use std::time::Duration;

use idem::db::Dialect;

use idem::store::sql::SqlStore;

use crate::support::sql::{TempDir, mysql_url, pg_url, suffix};

/// The business database of one test.
#[derive(Debug)]
pub(crate) struct LogDb {
    pub(crate) pool: Pool,
    pub(crate) store: SqlStore,
    cleanup: Option<(Dialect, String)>,
    _dir: Option<TempDir>,
}

#[derive(Debug, Clone)]
pub(crate) enum Pool {
    Pg(sqlx::PgPool),
    My(sqlx::MySqlPool),
    Lite(sqlx::SqlitePool),
}

const REFUNDS: &str = "CREATE TABLE refunds (order_no VARCHAR(64) NOT NULL, msg_id VARCHAR(64) NOT NULL, kind VARCHAR(16) NOT NULL)";

impl LogDb {
    pub(crate) async fn new(dialect: Dialect) -> LogDb {
        Self::with_pool(dialect, 4).await
    }

    /// With `max` pooled connections.
    pub(crate) async fn with_pool(dialect: Dialect, max: u32) -> LogDb {
        let name = format!("idem_c_{}", suffix());
        let (pool, cleanup, dir) = match dialect {
            Dialect::Postgres => {
                admin(dialect, &format!("CREATE SCHEMA {name}")).await;
                let opts = sqlx::postgres::PgConnectOptions::from_str(&pg_url())
                    .unwrap()
                    .options([("search_path", name.as_str())]);
                let pool = sqlx::postgres::PgPoolOptions::new()
                    .max_connections(max)
                    .acquire_timeout(Duration::from_secs(60))
                    .test_before_acquire(false)
                    .connect_with(opts)
                    .await
                    .unwrap_or_else(|e| panic!("PostgreSQL at {} is required: {e}", pg_url()));
                (Pool::Pg(pool), Some((dialect, name)), None)
            }
            Dialect::MySql => {
                admin(dialect, &format!("CREATE DATABASE {name}")).await;
                let base = mysql_url();
                let url = format!("{}/{name}", base.rsplit_once('/').unwrap().0);
                let pool = sqlx::mysql::MySqlPoolOptions::new()
                    .max_connections(max)
                    .acquire_timeout(Duration::from_secs(60))
                    .test_before_acquire(false)
                    .connect(&url)
                    .await
                    .unwrap_or_else(|e| panic!("MariaDB at {base} is required: {e}"));
                (Pool::My(pool), Some((dialect, name)), None)
            }
            _ => {
                let dir = TempDir::new();
                let opts = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(dir.path().join("biz.db"))
                    .create_if_missing(true)
                    .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                    .busy_timeout(Duration::from_secs(20));
                let pool = sqlx::sqlite::SqlitePoolOptions::new()
                    .max_connections(max)
                    .test_before_acquire(false)
                    .connect_with(opts)
                    .await
                    .expect("open sqlite");
                (Pool::Lite(pool), None, Some(dir))
            }
        };
        let store = match &pool {
            Pool::Pg(p) => SqlStore::postgres(p.clone()),
            Pool::My(p) => SqlStore::mysql(p.clone()),
            Pool::Lite(p) => SqlStore::sqlite(p.clone()),
        };
        store.migrate().await.expect("migrate");
        let db = LogDb {
            pool,
            store,
            cleanup,
            _dir: dir,
        };
        db.exec(REFUNDS).await;
        db
    }

    /// The schema of a PostgreSQL fixture, for a child process to attach to.
    pub(crate) fn schema(&self) -> &str {
        &self.cleanup.as_ref().expect("a server fixture").1
    }

    /// Attaches to the schema of another process's fixture (no cleanup).
    pub(crate) async fn attach_pg(schema: &str, max: u32) -> sqlx::PgPool {
        let opts = sqlx::postgres::PgConnectOptions::from_str(&pg_url())
            .unwrap()
            .options([("search_path", schema)]);
        sqlx::postgres::PgPoolOptions::new()
            .max_connections(max)
            .acquire_timeout(Duration::from_secs(20))
            .test_before_acquire(false)
            .connect_with(opts)
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL at {} is required: {e}", pg_url()))
    }

    pub(crate) fn pg(&self) -> &sqlx::PgPool {
        match &self.pool {
            Pool::Pg(p) => p,
            _ => panic!("not PostgreSQL"),
        }
    }

    pub(crate) async fn exec(&self, sql: &str) {
        let q = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()));
        match &self.pool {
            Pool::Pg(p) => q.execute(p).await.map(drop),
            Pool::My(p) => q.execute(p).await.map(drop),
            Pool::Lite(p) => q.execute(p).await.map(drop),
        }
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    pub(crate) async fn scalar(&self, sql: &str) -> i64 {
        let q = sqlx::AssertSqlSafe(sql.to_owned());
        match &self.pool {
            Pool::Pg(p) => sqlx::query_scalar(q).fetch_one(p).await,
            Pool::My(p) => sqlx::query_scalar(q).fetch_one(p).await,
            Pool::Lite(p) => sqlx::query_scalar(q).fetch_one(p).await,
        }
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// Business rows in `refunds`.
    pub(crate) async fn refunds(&self) -> i64 {
        self.scalar("SELECT COUNT(*) FROM refunds").await
    }

    /// Order numbers refunded more than once.
    pub(crate) async fn double_refunds(&self) -> i64 {
        self.scalar("SELECT COUNT(*) FROM (SELECT order_no FROM refunds WHERE kind = 'refund' GROUP BY order_no HAVING COUNT(*) > 1) d")
            .await
    }

    /// Rows in the consume log.
    pub(crate) async fn log_rows(&self) -> i64 {
        self.scalar("SELECT COUNT(*) FROM idem_consume_log").await
    }
}

/// Runs `sql` on the server's default database.
async fn admin(dialect: Dialect, sql: &str) {
    let q = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()));
    let r = match dialect {
        Dialect::Postgres => match sqlx::PgPool::connect(&pg_url()).await {
            Ok(p) => q.execute(&p).await.map(drop),
            Err(e) => Err(e),
        },
        _ => match sqlx::MySqlPool::connect(&mysql_url()).await {
            Ok(p) => q.execute(&p).await.map(drop),
            Err(e) => Err(e),
        },
    };
    r.unwrap_or_else(|e| panic!("{sql} (is the {dialect:?} server running?): {e}"));
}

impl Drop for LogDb {
    fn drop(&mut self) {
        let Some((dialect, name)) = self.cleanup.take() else {
            return;
        };
        let sql = match dialect {
            Dialect::Postgres => {
                format!("SET lock_timeout = '20s'; DROP SCHEMA IF EXISTS {name} CASCADE")
            }
            _ => format!("SET SESSION lock_wait_timeout = 20; DROP DATABASE IF EXISTS {name}"),
        };
        // Drop runs inside the test's runtime: use a thread with its own.
        let done = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(admin(dialect, &sql));
        })
        .join();
        if done.is_err() && !std::thread::panicking() {
            panic!("consume log fixture cleanup failed");
        }
    }
}
