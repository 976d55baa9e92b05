//! Opening the shop: the business tables on SQLite, and the idempotency store
//! — in-process by default, Redis when `REDIS_URL` is set, PostgreSQL when
//! `DATABASE_URL` is (Redis wins when both are). The store is wrapped in a
//! `FaultyStore` so the demo's fourth round can take it down.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize};
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
}

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, order_no TEXT NOT NULL, \
     user_id INTEGER NOT NULL, amount INTEGER NOT NULL, status TEXT NOT NULL)",
    "CREATE UNIQUE INDEX IF NOT EXISTS uk_orders_order_no ON orders (order_no)",
    "CREATE TABLE IF NOT EXISTS payments (pay_no TEXT PRIMARY KEY, order_no TEXT NOT NULL, amount INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS feedback (id INTEGER PRIMARY KEY, text TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS coupons (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL)",
];

/// The idempotency store the environment asks for.
async fn idem_store() -> Result<(Arc<dyn Store>, &'static str), BoxError> {
    #[cfg(feature = "redis")]
    if let Ok(url) = std::env::var("REDIS_URL") {
        let store = idem::store::redis::RedisStore::connect(&url).await?;
        return Ok((Arc::new(store), "redis"));
    }
    #[cfg(feature = "postgres")]
    if let Ok(url) = std::env::var("DATABASE_URL") {
        let store = idem::sql::SqlStore::connect_postgres(&url).await?;
        store.migrate().await?;
        return Ok((Arc::new(store), "postgres"));
    }
    Ok((Arc::new(MemoryStore::new()), "memory"))
}

/// Opens the shop: business tables in `db_path` (SQLite, created if missing),
/// keys under `namespace`.
pub(crate) async fn open(
    db_path: &std::path::Path,
    namespace: &str,
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
    for ddl in SCHEMA {
        sqlx::query(*ddl).execute(&db).await?;
    }
    let (store, name) = idem_store().await?;
    let store = Arc::new(FaultyStore::new(store));
    let idem = Idem::builder()
        .shared_store(store.clone())
        .namespace(namespace)
        // Names the index behind a SQLite unique violation.
        .constraints(idem::sql::SqlConstraints::sqlite(db.clone()))
        .build()?;
    idem.verify(&["uk_orders_order_no"]).await?;
    Ok(Arc::new(ShopState {
        idem,
        db,
        prometheus,
        order_runs: AtomicUsize::new(0),
        time_out_after_insert: AtomicBool::new(false),
        outage: Box::new(move |down| store.set_unavailable(down)),
        backends: Backends {
            idem_store: name,
            business_db: format!("sqlite:{}", db_path.display()),
        },
    }))
}
