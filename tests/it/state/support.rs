//! Fixtures for the state-machine tests: the same `t_order` / `t_ledger` tables
//! in a fresh place per test (a PostgreSQL schema on the connection's
//! `search_path`, a MariaDB database, a SQLite temp file), because the
//! attribute names its table literally. Dropped with the fixture.

use std::str::FromStr;
use std::time::Duration;

use crate::support::sql::{mysql_url, pg_url, suffix};
use crate::support::tempdir::TempDir;

/// The business tables, in SQL every dialect takes.
const TABLES: [&str; 3] = [
    "CREATE TABLE t_order (order_no VARCHAR(64) NOT NULL PRIMARY KEY, status VARCHAR(32) NOT NULL, version BIGINT NOT NULL DEFAULT 0)",
    "CREATE TABLE t_ledger (pay_no VARCHAR(64) NOT NULL PRIMARY KEY, order_no VARCHAR(64) NOT NULL, amount BIGINT NOT NULL)",
    "CREATE TABLE t_note (id VARCHAR(64) NOT NULL PRIMARY KEY)",
];

/// Connections per pool: five concurrent callbacks each hold one.
const POOL: u32 = 7;

/// What is removed when the fixture drops.
#[derive(Debug)]
pub(crate) enum Place {
    Pg(String),
    My(String),
    Lite(#[allow(dead_code)] TempDir),
}

impl Drop for Place {
    fn drop(&mut self) {
        let (url, sql) = match self {
            // Bounded lock waits: after a failed assertion a pooled connection
            // may still be inside a transaction; the cleanup must then fail
            // loudly, not hang the suite.
            Place::Pg(s) => (
                pg_url(),
                format!("SET lock_timeout = '20s'; DROP SCHEMA IF EXISTS {s} CASCADE"),
            ),
            Place::My(d) => (
                mysql_url(),
                format!("SET SESSION lock_wait_timeout = 20; DROP DATABASE IF EXISTS {d}"),
            ),
            Place::Lite(_) => return,
        };
        // Drop runs inside the test's runtime: a thread with its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let r = if url.starts_with("postgres") {
                    match sqlx::PgPool::connect(&url).await {
                        Ok(p) => sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                            .execute(&p)
                            .await
                            .map(drop),
                        Err(e) => Err(e),
                    }
                } else {
                    match sqlx::MySqlPool::connect(&url).await {
                        Ok(p) => sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                            .execute(&p)
                            .await
                            .map(drop),
                        Err(e) => Err(e),
                    }
                };
                if let Err(e) = r {
                    eprintln!("state fixture cleanup failed: {e}");
                }
            })
        })
        .join();
    }
}

async fn create<'c, E>(db: E, tables: &[&str])
where
    E: sqlx::Executor<'c> + Copy,
{
    for t in tables {
        sqlx::raw_sql(sqlx::AssertSqlSafe(*t))
            .execute(db)
            .await
            .expect("create state tables");
    }
}

pub(crate) async fn pg() -> (sqlx::PgPool, Place) {
    pg_with(&TABLES, POOL).await
}

/// A fresh PostgreSQL schema (on the pool's `search_path`) with `tables`.
pub(crate) async fn pg_with(tables: &[&str], size: u32) -> (sqlx::PgPool, Place) {
    let schema = format!("idem_sm_{}", suffix());
    let admin = sqlx::PgPool::connect(&pg_url())
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {} is required for this test: {e}", pg_url()));
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&admin)
        .await
        .unwrap();
    let opts = sqlx::postgres::PgConnectOptions::from_str(&pg_url())
        .unwrap()
        .options([("search_path", schema.as_str())]);
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(size)
        .acquire_timeout(Duration::from_secs(10))
        .test_before_acquire(false)
        .connect_with(opts)
        .await
        .unwrap();
    create(&pool, tables).await;
    (pool, Place::Pg(schema))
}

pub(crate) async fn mysql() -> (sqlx::MySqlPool, Place) {
    mysql_with(&TABLES, POOL).await
}

/// A fresh MariaDB database with `tables`.
pub(crate) async fn mysql_with(tables: &[&str], size: u32) -> (sqlx::MySqlPool, Place) {
    let db = format!("idem_sm_{}", suffix());
    let admin = sqlx::MySqlPool::connect(&mysql_url())
        .await
        .unwrap_or_else(|e| panic!("MariaDB at {} is required for this test: {e}", mysql_url()));
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}")))
        .execute(&admin)
        .await
        .unwrap();
    let url = mysql_url();
    let base = url.rsplit_once('/').map_or(url.as_str(), |(b, _)| b);
    let pool = sqlx::mysql::MySqlPoolOptions::new()
        .max_connections(size)
        .acquire_timeout(Duration::from_secs(10))
        .test_before_acquire(false)
        .connect(&format!("{base}/{db}"))
        .await
        .unwrap();
    create(&pool, tables).await;
    (pool, Place::My(db))
}

pub(crate) async fn sqlite() -> (sqlx::SqlitePool, Place) {
    sqlite_with(&TABLES, POOL).await
}

/// A fresh SQLite file (WAL, 10 s busy timeout) with `tables`.
pub(crate) async fn sqlite_with(tables: &[&str], size: u32) -> (sqlx::SqlitePool, Place) {
    let dir = TempDir::new();
    let opts = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.path().join("state.db"))
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(10));
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(size)
        .test_before_acquire(false)
        .connect_with(opts)
        .await
        .unwrap();
    create(&pool, tables).await;
    (pool, Place::Lite(dir))
}

/// Compiles only if the value is `Send`.
pub(crate) fn assert_send<T: Send>(_: &T) {}

/// `join_all` without the `futures` crate: every future on its own task would
/// need `'static`; these borrow the test's locals, so poll them together.
pub(crate) async fn futures_join_all<F: std::future::Future>(
    fs: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let fs: Vec<_> = fs.map(Box::pin).collect();
    let mut outs: Vec<Option<F::Output>> = fs.iter().map(|_| None).collect();
    let mut fs: Vec<Option<_>> = fs.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, out) in fs.iter_mut().zip(outs.iter_mut()) {
            if let Some(fut) = f {
                match fut.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        *out = Some(v);
                        *f = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outs.into_iter()
        .map(|o| o.expect("polled to completion"))
        .collect()
}
