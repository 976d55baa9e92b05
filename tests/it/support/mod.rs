//! Helpers shared by the integration tests: isolated namespaces, execution
//! counters, a business error type, and SQLite business tables.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idem::Store;

#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod biz;
pub mod capture;
pub mod child;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod fixture_store;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod fresh;
#[cfg(feature = "redis")]
pub mod old_redis;
#[cfg(feature = "redis")]
pub mod proxy;
#[cfg(feature = "redis")]
pub mod redis_server;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod sql;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod sql_log;
pub mod stores;

/// A namespace no other test (or earlier run on a shared server) uses.
pub fn unique_ns(prefix: &str) -> String {
    format!("t-{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// Counts body executions.
#[derive(Clone, Default, Debug)]
pub struct Counter(pub Arc<AtomicUsize>);

impl Counter {
    pub fn hit(&self) -> usize {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// The business error type of the tests: what a service would write.
/// Serializable so terminal errors can be stored; the `idem::Error` and
/// database variants are never stored.
#[derive(Debug, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum AppError {
    #[error(transparent)]
    #[serde(skip)]
    Idem(#[from] idem::Error),
    #[error("business failure: {0}")]
    Business(String),
    #[error("rejected: {0}")]
    Rejected(String),
    #[error("transient: {0}")]
    Transient(String),
    #[error("database: {0}")]
    #[serde(skip)]
    Db(#[from] sqlx::Error),
}

/// The operation timeout of [`handle`]: short, so outage tests stay fast.
pub const TEST_OP_TIMEOUT: Duration = Duration::from_millis(800);

/// The shortest lease that leaves a call [`TEST_OP_TIMEOUT`] whole: a call's
/// operations get at most a third of its lease (`Policy::op_budget`), and a
/// loaded machine needs all of it on a network store (issue 18). Tests that do
/// not wait for a lease to lapse use at least this.
pub const FULL_BUDGET_LEASE: Duration = Duration::from_millis(2400);

/// A handle on `store` under a fresh namespace, with a short op timeout so
/// outage tests stay fast.
pub fn handle(store: Arc<dyn Store>, prefix: &str) -> idem::Idem {
    idem::Idem::builder()
        .shared_store(store)
        .namespace(unique_ns(prefix))
        .op_timeout(TEST_OP_TIMEOUT)
        .build()
        .expect("valid handle")
}

/// A file-backed SQLite pool (WAL) in a temp dir, for business tables.
pub async fn sqlite_business_db() -> (sqlx::SqlitePool, tempdir::TempDir) {
    let dir = tempdir::TempDir::new();
    let opts = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.path().join("biz.db"))
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(10));
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(4)
        .test_before_acquire(false)
        .connect_with(opts)
        .await
        .expect("open sqlite business db");
    sqlx::query(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY AUTOINCREMENT, order_no TEXT NOT NULL, amount INTEGER NOT NULL)",
    )
    .execute(&pool)
    .await
    .expect("create orders");
    sqlx::query("CREATE UNIQUE INDEX uk_order_no ON orders(order_no)")
        .execute(&pool)
        .await
        .expect("create uk_order_no");
    (pool, dir)
}

/// Rows per order number in the business table.
pub async fn order_rows(pool: &sqlx::SqlitePool, order_no: &str) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM orders WHERE order_no = ?")
        .bind(order_no)
        .fetch_one(pool)
        .await
        .expect("count orders")
}

pub mod tempdir {
    //! A temp directory removed on drop (std only).
    use std::path::{Path, PathBuf};

    #[derive(Debug)]
    pub struct TempDir(PathBuf);

    impl TempDir {
        pub fn new() -> Self {
            let p =
                std::env::temp_dir().join(format!("idem-test-{}", uuid::Uuid::new_v4().simple()));
            std::fs::create_dir_all(&p).expect("create temp dir");
            TempDir(p)
        }
        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
