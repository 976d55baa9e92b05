//! Opening the shop: the business tables on SQLite, and the idempotency store
//! — in-process by default, Redis when `REDIS_URL` is set, PostgreSQL when
//! `DATABASE_URL` is (Redis wins when both are). The store is wrapped in a
//! `FaultyStore` so the demo's fourth round can take it down.
//!
//! The namespace prefixes every idempotency key. Records outlive the process
//! on Redis and PostgreSQL, so a namespace must belong to one business
//! database: reusing `shop` over a fresh SQLite file would replay orders that
//! file never had (the demo's second run failed every verdict).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::time::Duration;

use idem::{FaultyStore, Idem, MemoryStore, Store};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};

use super::{Shop, ShopState};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Which stores serve the shop.
#[derive(Debug, Clone)]
pub(crate) struct Backends {
    pub(crate) idem_store: &'static str,
    pub(crate) business_db: String,
    pub(crate) namespace: String,
}

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, order_no TEXT NOT NULL, \
     user_id INTEGER NOT NULL, amount INTEGER NOT NULL, status TEXT NOT NULL)",
    "CREATE UNIQUE INDEX IF NOT EXISTS uk_orders_order_no ON orders (order_no)",
    "CREATE TABLE IF NOT EXISTS payments (pay_no TEXT PRIMARY KEY, order_no TEXT NOT NULL, amount INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS feedback (id INTEGER PRIMARY KEY, text TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS coupons (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL)",
];

/// Where the idempotency records live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IdemStore {
    /// In this process (lost on exit).
    Memory,
    /// A Redis URL (feature `redis`).
    Redis(String),
    /// A PostgreSQL URL (feature `postgres`).
    Postgres(String),
}

impl IdemStore {
    /// `REDIS_URL`, else `DATABASE_URL`, else in-process.
    pub(crate) fn from_env() -> Self {
        if let Ok(url) = std::env::var("REDIS_URL") {
            return IdemStore::Redis(url);
        }
        if let Ok(url) = std::env::var("DATABASE_URL") {
            return IdemStore::Postgres(url);
        }
        IdemStore::Memory
    }

    /// Connects (and creates the record table on PostgreSQL).
    async fn connect(&self) -> Result<(Arc<dyn Store>, &'static str), BoxError> {
        match self {
            IdemStore::Memory => Ok((Arc::new(MemoryStore::new()), "memory")),
            #[cfg(feature = "redis")]
            IdemStore::Redis(url) => {
                let store = idem::RedisStore::connect(url).await?;
                Ok((Arc::new(store), "redis"))
            }
            #[cfg(feature = "postgres")]
            IdemStore::Postgres(url) => {
                let store = idem::SqlStore::connect_postgres(url).await?;
                store.migrate().await?;
                Ok((Arc::new(store), "postgres"))
            }
            #[allow(unreachable_patterns)] // built without `redis` or `postgres`
            other => Err(format!("{other:?} needs the matching cargo feature").into()),
        }
    }
}

/// A namespace no earlier run used: `shop-<12 hex>`.
pub(crate) fn fresh_namespace() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("shop-{}", &id[..12])
}

/// Opens the shop: business tables in `db_path` (SQLite, created if missing),
/// keys under `namespace` in `store`.
pub(crate) async fn open(
    db_path: &std::path::Path,
    namespace: &str,
    store: &IdemStore,
    prometheus: Option<metrics_exporter_prometheus::PrometheusHandle>,
) -> Result<Shop, BoxError> {
    let db = SqlitePoolOptions::new()
        .max_connections(4)
        .test_before_acquire(false) // a ping per acquire costs 17–29% of a statement
        .connect_with(
            SqliteConnectOptions::new()
                .filename(db_path)
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .busy_timeout(Duration::from_secs(10)),
        )
        .await?;
    for ddl in SCHEMA.iter().chain(super::stock::SCHEMA) {
        sqlx::query(*ddl).execute(&db).await?;
    }
    let (store, name) = store.connect().await?;
    let store = Arc::new(FaultyStore::new(store));
    let idem = Idem::builder()
        .shared_store(store.clone())
        .namespace(namespace)
        // Names the index behind a SQLite unique violation.
        .constraints(idem::sql::SqlConstraints::sqlite(db.clone()))
        .build()?;
    idem.verify(&["uk_orders_order_no", "uk_refunds_refund_no"])
        .await?;
    Ok(Arc::new(ShopState {
        idem,
        db,
        prometheus,
        order_runs: AtomicUsize::new(0),
        form_posts: AtomicUsize::new(0),
        order_pause_ms: AtomicU64::new(50),
        time_out_after_insert: AtomicBool::new(false),
        outage: Box::new(move |down| store.set_unavailable(down)),
        backends: Backends {
            idem_store: name,
            business_db: format!("sqlite:{}", db_path.display()),
            namespace: namespace.to_owned(),
        },
    }))
}
