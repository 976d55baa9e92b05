//! Fixtures for the SQL store tests: a fresh set of idem tables per test on the
//! shared PostgreSQL and MariaDB servers (a fresh schema on PostgreSQL, fresh
//! table names on MariaDB) or in a SQLite temp file, dropped when the fixture is
//! dropped. A missing server fails the test loudly.

use std::sync::Arc;
use std::time::Duration;

use idem::store::sql::{Dialect, SqlStore, TableNames};

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
    cleanup: Option<Cleanup>,
}

#[derive(Debug)]
enum Cleanup {
    Pg(String),
    My(Vec<String>),
    Lite(crate::sql_support::TempDir),
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

/// Instantiates `async fn case(Dialect)` tests once per database, in modules
/// `postgres`, `mariadb` and `sqlite`.
macro_rules! per_database {
    ($($case:ident),* $(,)?) => {
        mod postgres { $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() { super::$case(idem::store::sql::Dialect::Postgres).await }
        )* }
        mod mariadb { $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() { super::$case(idem::store::sql::Dialect::MySql).await }
        )* }
        mod sqlite { $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() { super::$case(idem::store::sql::Dialect::Sqlite).await }
        )* }
    };
}
pub(crate) use per_database;

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

/// A fixture as an `Arc<dyn Store>`: the tables go when the last handle does.
#[derive(Debug)]
pub(crate) struct FixtureStore(pub(crate) Fixture);

impl idem::Store for FixtureStore {
    fn name(&self) -> &'static str {
        self.0.store.name()
    }
    fn claim<'a>(
        &'a self,
        req: idem::store::ClaimRequest<'a>,
    ) -> idem::store::BoxFuture<'a, Result<idem::store::Claim, idem::store::StoreError>> {
        self.0.store.claim(req)
    }
    fn complete<'a>(
        &'a self,
        key: &'a str,
        owner: idem::store::Owner,
        payload: &'a [u8],
        ttl: Duration,
    ) -> idem::store::BoxFuture<'a, Result<idem::store::Owned, idem::store::StoreError>> {
        self.0.store.complete(key, owner, payload, ttl)
    }
    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: idem::store::Owner,
    ) -> idem::store::BoxFuture<'a, Result<idem::store::Owned, idem::store::StoreError>> {
        self.0.store.release(key, owner)
    }
    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: idem::store::Owner,
        lease: Duration,
    ) -> idem::store::BoxFuture<'a, Result<idem::store::Owned, idem::store::StoreError>> {
        self.0.store.renew(key, owner, lease)
    }
    fn inspect<'a>(
        &'a self,
        key: &'a str,
    ) -> idem::store::BoxFuture<'a, Result<Option<idem::store::RecordState>, idem::store::StoreError>>
    {
        self.0.store.inspect(key)
    }
    fn forget<'a>(
        &'a self,
        key: &'a str,
    ) -> idem::store::BoxFuture<'a, Result<bool, idem::store::StoreError>> {
        self.0.store.forget(key)
    }
    fn purge_expired(&self) -> idem::store::BoxFuture<'_, Result<u64, idem::store::StoreError>> {
        self.0.store.purge_expired()
    }
    fn purge_report(
        &self,
        dry_run: bool,
    ) -> idem::store::BoxFuture<'_, Result<idem::store::PurgeReport, idem::store::StoreError>> {
        self.0.store.purge_report(dry_run)
    }
    fn census<'a>(
        &'a self,
        namespace: &'a str,
    ) -> idem::store::BoxFuture<'a, Result<idem::store::Census, idem::store::StoreError>> {
        self.0.store.census(namespace)
    }
    fn verify(
        &self,
    ) -> idem::store::BoxFuture<'_, Result<Vec<idem::store::Warning>, idem::store::StoreError>>
    {
        self.0.store.verify()
    }
    fn tokens(&self) -> Option<&dyn idem::store::token::TokenStore> {
        self.0.store.tokens()
    }
    fn send_queue(&self) -> Option<&idem::store::SendQueue> {
        self.0.store.send_queue()
    }
}

/// A fresh store on `dialect` for the shared conformance suite.
pub(crate) async fn conformance_store(dialect: Dialect) -> Arc<dyn idem::Store> {
    Arc::new(FixtureStore(Fixture::new(dialect).await))
}

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
