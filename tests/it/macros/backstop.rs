//! `backstop` + `on_conflict` on a real SQLite table with a unique index: when
//! the idempotency record is lost, the constraint catches the duplicate and
//! `on_conflict` loads the existing row.
#![cfg(feature = "sqlite")]

use std::sync::Arc;

use idem::{FaultyStore, Idem, MemoryStore};
use sqlx::SqlitePool;
use sqlx::sqlite::SqlitePoolOptions;

use crate::macros::support::{Counter, handles};

#[derive(Debug, thiserror::Error)]
enum ShopError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error("database")]
    Db(#[from] sqlx::Error),
}

async fn pool() -> SqlitePool {
    // One connection: every connection to `sqlite::memory:` is its own database.
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect("sqlite::memory:")
        .await
        .expect("in-memory sqlite");
    sqlx::query("CREATE TABLE orders (id INTEGER PRIMARY KEY, order_no TEXT NOT NULL, amount INTEGER NOT NULL)")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("CREATE UNIQUE INDEX uk_orders_order_no ON orders (order_no)")
        .execute(&pool)
        .await
        .unwrap();
    pool
}

#[idem::idempotent(key = "bs-order:<order_no>", backstop = "uk_orders_order_no", on_conflict = find_order, handle = idem)]
async fn create_order(
    idem: &Idem,
    db: &SqlitePool,
    runs: &Counter,
    order_no: &str,
    amount: i64,
) -> Result<i64, ShopError> {
    runs.hit();
    let id = sqlx::query_scalar::<_, i64>(
        "INSERT INTO orders (order_no, amount) VALUES (?, ?) RETURNING id",
    )
    .bind(order_no)
    .bind(amount)
    .fetch_one(db)
    .await?;
    Ok(id)
}

/// Loads the row the first request inserted (on a fresh pool connection).
async fn find_order(
    _: &Idem,
    db: &SqlitePool,
    _: &Counter,
    order_no: &str,
    _: &i64,
) -> Result<i64, ShopError> {
    Ok(
        sqlx::query_scalar::<_, i64>("SELECT id FROM orders WHERE order_no = ?")
            .bind(order_no)
            .fetch_one(db)
            .await?,
    )
}

#[idem::idempotent(key = "bs-plain:<order_no>", backstop = "uk_orders_order_no", handle = idem)]
async fn create_plain(idem: &Idem, db: &SqlitePool, order_no: &str) -> Result<i64, ShopError> {
    let id = sqlx::query_scalar::<_, i64>(
        "INSERT INTO orders (order_no, amount) VALUES (?, 1) RETURNING id",
    )
    .bind(order_no)
    .fetch_one(db)
    .await?;
    Ok(id)
}

async fn rows(db: &SqlitePool, order_no: &str) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM orders WHERE order_no = ?")
        .bind(order_no)
        .fetch_one(db)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_lost_record_is_caught_by_the_unique_index_and_loaded() {
    for (idem, _dir) in handles().await {
        let db = pool().await;
        let runs = Counter::default();
        let id = create_order(&idem, &db, &runs, "A-1", 500).await.unwrap();
        assert_eq!(
            create_order(&idem, &db, &runs, "A-1", 500).await.unwrap(),
            id
        );
        assert_eq!(runs.get(), 1);

        // The fast store loses the record (eviction, failover): the body runs again,
        // the insert hits `uk_orders_order_no`, and `on_conflict` returns the first row.
        assert!(idem.forget(&idem.key("bs-order", &[&"A-1"])).await.unwrap());
        assert_eq!(
            create_order(&idem, &db, &runs, "A-1", 500).await.unwrap(),
            id
        );
        assert_eq!(runs.get(), 2);
        assert_eq!(rows(&db, "A-1").await, 1);
        assert_eq!(idem.stats().backstop_hits(), 1);
        // The loaded result was stored: the next repeat is a plain replay.
        assert_eq!(
            create_order(&idem, &db, &runs, "A-1", 500).await.unwrap(),
            id
        );
        assert_eq!(runs.get(), 2);
    }
}

#[tokio::test]
async fn without_on_conflict_a_backstop_hit_is_duplicate() {
    for (idem, _dir) in handles().await {
        let db = pool().await;
        create_plain(&idem, &db, "B-1").await.unwrap();
        assert!(idem.forget(&idem.key("bs-plain", &[&"B-1"])).await.unwrap());
        let err = create_plain(&idem, &db, "B-1").await.unwrap_err();
        assert!(
            matches!(&err, ShopError::Idem(idem::Error::Duplicate { constraint, .. }) if constraint == "uk_orders_order_no"),
            "{err:?}"
        );
        assert_eq!(rows(&db, "B-1").await, 1);
    }
}

#[idem::idempotent(
    key = "bs-degraded:<order_no>",
    backstop = "uk_orders_order_no",
    degrade = "backstop",
    on_conflict = find_order,
    handle = idem
)]
async fn create_degraded(
    idem: &Idem,
    db: &SqlitePool,
    runs: &Counter,
    order_no: &str,
    amount: i64,
) -> Result<i64, ShopError> {
    runs.hit();
    let id = sqlx::query_scalar::<_, i64>(
        "INSERT INTO orders (order_no, amount) VALUES (?, ?) RETURNING id",
    )
    .bind(order_no)
    .bind(amount)
    .fetch_one(db)
    .await?;
    Ok(id)
}

#[tokio::test]
async fn store_down_fails_closed_unless_degrade_lets_the_constraint_decide() {
    let faulty = Arc::new(FaultyStore::new(MemoryStore::new()));
    let idem = Idem::builder()
        .shared_store(faulty.clone())
        .namespace("it")
        .build()
        .unwrap();
    let db = pool().await;
    let runs = Counter::default();
    faulty.set_unavailable(true);

    // Without `degrade`: fail closed, the body does not run.
    let err = create_order(&idem, &db, &runs, "D-1", 5).await.unwrap_err();
    assert!(
        matches!(err, ShopError::Idem(idem::Error::StoreUnavailable { .. })),
        "{err:?}"
    );
    assert_eq!(runs.get(), 0);

    // With `degrade = "backstop"`: the body runs and the unique index decides.
    let first = create_degraded(&idem, &db, &runs, "D-2", 7).await.unwrap();
    let again = create_degraded(&idem, &db, &runs, "D-2", 7).await.unwrap();
    assert_eq!(again, first, "the duplicate got the existing row");
    assert_eq!(runs.get(), 2);
    assert_eq!(rows(&db, "D-2").await, 1);
    // Both calls ran their body without the store: both are `degraded`; the
    // second is also a backstop hit (issue 19).
    let stats = idem.stats();
    assert_eq!(stats.count("degraded"), 2);
    assert_eq!(
        (stats.count("backstop"), stats.degraded_backstop_hits),
        (0, 1)
    );
    assert_eq!(stats.backstop_hits(), 1);
}

#[idem::idempotent(
    key = "bs-degraded-local:<order_no>",
    backstop = "uk_orders_order_no",
    degrade = "local",
    on_conflict = find_order,
    handle = idem
)]
async fn create_degraded_local(
    idem: &Idem,
    db: &SqlitePool,
    runs: &Counter,
    order_no: &str,
    amount: i64,
) -> Result<i64, ShopError> {
    runs.hit();
    let id = sqlx::query_scalar::<_, i64>(
        "INSERT INTO orders (order_no, amount) VALUES (?, ?) RETURNING id",
    )
    .bind(order_no)
    .bind(amount)
    .fetch_one(db)
    .await?;
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    Ok(id)
}

/// `degrade = "local"`: with the store down, 8 concurrent calls of one key in one
/// process run one body; the others wait for it and get its value (`waited`),
/// instead of each running into the constraint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn degrade_local_runs_one_body_per_key_in_the_process() {
    let faulty = Arc::new(FaultyStore::new(MemoryStore::new()));
    let idem = Idem::builder()
        .shared_store(faulty.clone())
        .namespace("it")
        .build()
        .unwrap();
    let db = pool().await;
    let runs = Arc::new(Counter::default());
    faulty.set_unavailable(true);
    let barrier = Arc::new(tokio::sync::Barrier::new(8));
    let calls = (0..8).map(|_| {
        let (idem, db, runs, barrier) = (idem.clone(), db.clone(), runs.clone(), barrier.clone());
        tokio::spawn(async move {
            barrier.wait().await;
            create_degraded_local(&idem, &db, &runs, "L-1", 3).await
        })
    });
    let ids: Vec<i64> = futures_ids(calls.collect()).await;
    assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
    assert_eq!(runs.get(), 1, "one body for the key in this process");
    assert_eq!(rows(&db, "L-1").await, 1);
    let stats = idem.stats();
    assert_eq!((stats.count("degraded"), stats.count("waited")), (1, 7));
    assert_eq!(stats.backstop_hits(), 0);
}

async fn futures_ids(tasks: Vec<tokio::task::JoinHandle<Result<i64, ShopError>>>) -> Vec<i64> {
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(t.await.unwrap().unwrap());
    }
    ids
}
