//! Fixtures for the SQL store tests: a fresh set of idem tables per test in a
//! fresh database (a schema that names the tables on PostgreSQL, a database
//! on MariaDB, a SQLite temp file), dropped when the fixture is dropped. A
//! missing server fails the test loudly.

use std::sync::Arc;
use std::time::Duration;

use idem::db::Dialect;

use idem::store::sql::{SqlStore, TableNames};

use super::fresh::{FreshDb, Pool};

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

/// A PostgreSQL pool of `max` connections on `url` (5 s to acquire one: a
/// test that runs its pool dry fails fast).
pub(crate) async fn connect_pg(url: &str, max: u32) -> sqlx::PgPool {
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(Duration::from_secs(5))
        .test_before_acquire(false)
        .connect(url)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {url} is required for this test: {e}"))
}

/// A MariaDB pool of `max` connections on `url`, as [`connect_pg`].
pub(crate) async fn connect_mysql(url: &str, max: u32) -> sqlx::MySqlPool {
    sqlx::mysql::MySqlPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(Duration::from_secs(5))
        .test_before_acquire(false)
        .connect(url)
        .await
        .unwrap_or_else(|e| panic!("MariaDB/MySQL at {url} is required for this test: {e}"))
}

/// Fresh idem tables on a fresh database (see [`FreshDb`]), removed on drop.
#[derive(Debug)]
pub(crate) struct Fixture {
    pub(crate) store: Arc<SqlStore>,
    pub(crate) names: TableNames,
    pub(crate) dialect: Dialect,
    pub(crate) db: FreshDb,
}

impl Fixture {
    pub(crate) async fn new(dialect: Dialect) -> Fixture {
        let db = FreshDb::new(dialect, "idem_t").await;
        let (store, names) = match dialect {
            Dialect::Postgres => {
                // The tables are named with their schema, on a pool that does
                // not search it: what a user of `TableNames::schema` has.
                let names = TableNames::default().schema(db.name()).unwrap();
                let store = SqlStore::postgres(connect_pg(&pg_url(), POOL).await);
                (store.with_tables(names.clone()), names)
            }
            Dialect::MySql => {
                let names = TableNames::new(&format!("idem_t_{}", suffix())).unwrap();
                let store = SqlStore::mysql(connect_mysql(&db.url(), POOL).await);
                (store.with_tables(names.clone()), names)
            }
            _ => {
                let store = SqlStore::open(db.file("idem.db"))
                    .await
                    .expect("open sqlite");
                let names = store.tables().clone();
                (store, names)
            }
        };
        store.migrate().await.expect("migrate");
        Fixture {
            store: Arc::new(store),
            names,
            dialect,
            db,
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
            Dialect::Postgres => SqlStore::postgres(connect_pg(&pg_url(), max).await),
            Dialect::MySql => SqlStore::mysql(connect_mysql(&self.db.url(), max).await),
            _ => SqlStore::open(self.db.file("idem.db")).await.unwrap(),
        };
        store.with_tables(self.names.clone())
    }

    /// Runs raw SQL against the fixture's database (test-only manipulations).
    pub(crate) async fn exec(&self, sql: &str) {
        let pool = match self.dialect {
            Dialect::Postgres => Pool::Pg(connect_pg(&pg_url(), 1).await),
            Dialect::MySql => Pool::My(connect_mysql(&self.db.url(), 1).await),
            _ => Pool::Lite(
                sqlx::SqlitePool::connect_with(
                    sqlx::sqlite::SqliteConnectOptions::new()
                        .filename(self.db.file("idem.db"))
                        .busy_timeout(Duration::from_secs(5)),
                )
                .await
                .unwrap(),
            ),
        };
        pool.exec(sql).await;
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
