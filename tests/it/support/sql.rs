//! Fixtures for the SQL store tests: a fresh set of idem tables per test on the
//! shared PostgreSQL and MariaDB servers (a fresh schema on PostgreSQL, fresh
//! table names on MariaDB) or in a SQLite temp file, dropped when the fixture is
//! dropped. A missing server fails the test loudly.

use std::sync::Arc;
use std::time::Duration;

use idem::db::Dialect;

use idem::store::sql::{SqlStore, TableNames};

pub(crate) fn pg_url() -> String {
    std::env::var("IDEM_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

pub(crate) fn mysql_url() -> String {
    std::env::var("IDEM_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into())
}

pub(crate) fn stress() -> bool {
    std::env::var("IDEM_STRESS").is_ok_and(|v| v == "1")
}

pub(crate) fn suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_owned()
}

/// Connections per test pool. The test binary runs 8 tests at once next to
/// other suites on one PostgreSQL (`max_connections = 100`): 16-connection
/// pools ran it out of connections, and 2 cores gain nothing from more.
const POOL: u32 = 4;

async fn one_connection_pg() -> sqlx::PgPool {
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&pg_url())
        .await
        .unwrap()
}

async fn one_connection_mysql() -> sqlx::MySqlPool {
    sqlx::mysql::MySqlPoolOptions::new()
        .max_connections(1)
        .connect(&mysql_url())
        .await
        .unwrap()
}

/// Fresh idem tables on one database, removed on drop.
#[derive(Debug)]
pub(crate) struct Fixture {
    pub(crate) store: Arc<SqlStore>,
    pub(crate) names: TableNames,
    pub(crate) dialect: Dialect,
    pub(crate) cleanup: Option<Cleanup>,
}

#[derive(Debug)]
pub(crate) enum Cleanup {
    Pg(String),
    My(Vec<String>),
    Lite(crate::support::sql::TempDir),
}

impl Fixture {
    pub(crate) async fn new(dialect: Dialect) -> Fixture {
        let sfx = suffix();
        match dialect {
            Dialect::Postgres => {
                let schema = format!("idem_t_{sfx}");
                let names = TableNames::default().schema(&schema).unwrap();
                let pool = sqlx::postgres::PgPoolOptions::new()
                    .max_connections(POOL)
                    .acquire_timeout(Duration::from_secs(5))
                    .test_before_acquire(false)
                    .connect(&pg_url())
                    .await
                    .unwrap_or_else(|e| {
                        panic!("PostgreSQL at {} is required for this test: {e}", pg_url())
                    });
                let store = SqlStore::postgres(pool).with_tables(names.clone());
                store.migrate().await.expect("migrate postgres");
                Fixture {
                    store: Arc::new(store),
                    names,
                    dialect,
                    cleanup: Some(Cleanup::Pg(schema)),
                }
            }
            Dialect::MySql => {
                let names = TableNames::new(&format!("idem_t_{sfx}")).unwrap();
                let pool = sqlx::mysql::MySqlPoolOptions::new()
                    .max_connections(POOL)
                    .acquire_timeout(Duration::from_secs(5))
                    .test_before_acquire(false)
                    .connect(&mysql_url())
                    .await
                    .unwrap_or_else(|e| {
                        panic!(
                            "MariaDB/MySQL at {} is required for this test: {e}",
                            mysql_url()
                        )
                    });
                let store = SqlStore::mysql(pool).with_tables(names.clone());
                store.migrate().await.expect("migrate mysql");
                // The business table of `Biz::new` shares the prefix and goes with them.
                let tables = vec![
                    names.records_name().to_owned(),
                    names.fences_name().to_owned(),
                    names.tokens_name().to_owned(),
                    names.consume_log_name().to_owned(),
                    format!("{}_orders", names.records_name()),
                ];
                Fixture {
                    store: Arc::new(store),
                    names,
                    dialect,
                    cleanup: Some(Cleanup::My(tables)),
                }
            }
            _ => {
                let dir = TempDir::new();
                let store = SqlStore::open(dir.path().join("idem.db"))
                    .await
                    .expect("open sqlite");
                store.migrate().await.expect("migrate sqlite");
                Fixture {
                    names: store.tables().clone(),
                    store: Arc::new(store),
                    dialect,
                    cleanup: Some(Cleanup::Lite(dir)),
                }
            }
        }
    }

    pub(crate) fn dyn_store(&self) -> Arc<dyn idem::Store> {
        self.store.clone()
    }

    /// A second store on the same tables with its own pool, as another process
    /// would have.
    pub(crate) async fn another_instance(&self) -> SqlStore {
        self.another_instance_with(1).await
    }

    /// [`another_instance`](Self::another_instance) with a pool of `max`
    /// connections on the servers (SQLite: the store's own pool).
    pub(crate) async fn another_instance_with(&self, max: u32) -> SqlStore {
        let store = match self.dialect {
            Dialect::Postgres => SqlStore::postgres(
                sqlx::postgres::PgPoolOptions::new()
                    .max_connections(max)
                    .test_before_acquire(false)
                    .connect(&pg_url())
                    .await
                    .unwrap(),
            ),
            Dialect::MySql => SqlStore::mysql(
                sqlx::mysql::MySqlPoolOptions::new()
                    .max_connections(max)
                    .test_before_acquire(false)
                    .connect(&mysql_url())
                    .await
                    .unwrap(),
            ),
            _ => {
                let Some(Cleanup::Lite(dir)) = &self.cleanup else {
                    unreachable!()
                };
                SqlStore::open(dir.path().join("idem.db")).await.unwrap()
            }
        };
        store.with_tables(self.names.clone())
    }

    /// Runs raw SQL against the fixture's database (test-only manipulations).
    pub(crate) async fn exec(&self, sql: &str) {
        match self.dialect {
            Dialect::Postgres => {
                let pool = one_connection_pg().await;
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
                    .execute(&pool)
                    .await
                    .unwrap();
            }
            Dialect::MySql => {
                let pool = one_connection_mysql().await;
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
                    .execute(&pool)
                    .await
                    .unwrap();
            }
            _ => {
                let Some(Cleanup::Lite(dir)) = &self.cleanup else {
                    unreachable!()
                };
                let opts = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(dir.path().join("idem.db"))
                    .busy_timeout(Duration::from_secs(5));
                let pool = sqlx::SqlitePool::connect_with(opts).await.unwrap();
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
                    .execute(&pool)
                    .await
                    .unwrap();
            }
        }
    }

    /// The one-time token table as SQL text can name it.
    pub(crate) fn tokens(&self) -> String {
        match (self.dialect, self.names.schema_name()) {
            (Dialect::Postgres, Some(s)) => format!("{s}.{}", self.names.tokens_name()),
            _ => self.names.tokens_name().to_owned(),
        }
    }

    /// The records table as SQL text can name it.
    pub(crate) fn records(&self) -> String {
        match (self.dialect, self.names.schema_name()) {
            (Dialect::Postgres, Some(s)) => format!("{s}.{}", self.names.records_name()),
            _ => self.names.records_name().to_owned(),
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let Some(c) = self.cleanup.take() else { return };
        let sql = match &c {
            // Bounded lock waits: a connection left inside a transaction must fail
            // the cleanup loudly, not hang the suite.
            Cleanup::Pg(schema) => {
                format!("SET lock_timeout = '20s'; DROP SCHEMA IF EXISTS {schema} CASCADE")
            }
            Cleanup::My(tables) => format!(
                "SET SESSION lock_wait_timeout = 20; DROP TABLE IF EXISTS {}",
                tables.join(", ")
            ),
            Cleanup::Lite(_) => return, // the temp dir goes with `c`
        };
        let dialect = self.dialect;
        // Drop runs inside the test's runtime: use a thread with its own.
        let cleanup = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let r = match dialect {
                    Dialect::Postgres => match sqlx::postgres::PgPoolOptions::new()
                        .max_connections(1)
                        .connect(&pg_url())
                        .await
                    {
                        Ok(p) => sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                            .execute(&p)
                            .await
                            .map(drop),
                        Err(e) => Err(e),
                    },
                    _ => match sqlx::mysql::MySqlPoolOptions::new()
                        .max_connections(1)
                        .connect(&mysql_url())
                        .await
                    {
                        Ok(p) => sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                            .execute(&p)
                            .await
                            .map(drop),
                        Err(e) => Err(e),
                    },
                };
                r.map_err(|e| e.to_string())
            })
        })
        .join();
        let failed = match cleanup {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(_) => Some("cleanup thread panicked".to_owned()),
        };
        if let Some(e) = failed {
            // Not while unwinding from the test's own failure (that would abort).
            if !std::thread::panicking() {
                panic!("fixture cleanup failed (a pooled connection left in a transaction?): {e}");
            }
        }
    }
}

pub(crate) use crate::support::tempdir::TempDir;

/// Runs a test once per database: the one "per database" macro of the suite.
///
/// - `per_database!(case, …)`: each `async fn case(Dialect)` as a test in
///   modules `postgres`, `mariadb` and `sqlite`;
/// - `per_database!(generic: name, f)`: the generic `async fn f<D: TestDb>()`
///   as tests `postgres`, `mariadb` and `sqlite` in a module `name`.
macro_rules! per_database {
    (generic: $name:ident, $f:ident $(,)?) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$f::<sqlx::PgPool>().await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mariadb() {
                super::$f::<sqlx::MySqlPool>().await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$f::<sqlx::SqlitePool>().await;
            }
        }
    };
    ($($case:ident),* $(,)?) => {
        mod postgres { $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() { super::$case(idem::db::Dialect::Postgres).await }
        )* }
        mod mariadb { $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() { super::$case(idem::db::Dialect::MySql).await }
        )* }
        mod sqlite { $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() { super::$case(idem::db::Dialect::Sqlite).await }
        )* }
    };
}
pub(crate) use per_database;

pub(crate) use super::biz::{Biz, BizPool};

pub(crate) use super::fixture_store::conformance_store;

/// Keys of the conformance suite's many-keys test (50 callers each). Its handle
/// gives every store operation 800 ms, and a burst of 50 × N claims through one
/// pool on this 2-core machine (database server included) is CPU-bound, and
/// the binary runs these bursts side by side: 30 keys fit that budget. The CI
/// sizes (100 keys on PostgreSQL/MariaDB, 200 on SQLite, 1,000 under
/// `IDEM_STRESS=1`) run in `sql_store::*::concurrent_callers_many_keys`, one
/// database at a time, with a 5 s operation budget.
pub(crate) fn many_keys(_dialect: Dialect) -> usize {
    30
}

/// Keys of `sql_store`'s many-keys test: the CI size, or 1,000 under `IDEM_STRESS=1`.
pub(crate) fn ci_keys(dialect: Dialect) -> usize {
    match (stress(), dialect) {
        (true, _) => 1000,
        (false, Dialect::Sqlite) => 200,
        (false, _) => 100,
    }
}
