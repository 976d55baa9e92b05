//! An application on sqlx 0.8 guarding an order insert with idem (on sqlx 0.9).
//!
//! The fast store loses the first call's record; the retry's insert hits the
//! unique index and the error the body returns is a sqlx **0.8** error, a type
//! idem's typed detection cannot downcast to. The backstop must still fire:
//! `on_conflict` loads the first order, the call is a replay, one backstop hit.
//! `verify()` must pass with the built-in detection and fail with it off.
//! Exits non-zero if any of that does not hold.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use idem::observe::CallOutcome;
use idem::{FaultyStore, Idem, MemoryStore, reported};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

#[derive(Debug, thiserror::Error)]
enum AppError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
}

static RUNS: AtomicUsize = AtomicUsize::new(0);

#[idem::idempotent(key = "skew-order:<order_no>", handle = idem, backstop = "uk_skew_order_no",
                   on_conflict = find_order)]
async fn create_order(idem: &Idem, db: &PgPool, order_no: &str) -> Result<i64, AppError> {
    RUNS.fetch_add(1, Ordering::SeqCst);
    Ok(
        sqlx::query_scalar("INSERT INTO orders (order_no) VALUES ($1) RETURNING id")
            .bind(order_no)
            .fetch_one(db)
            .await?,
    )
}

async fn find_order(_: &Idem, db: &PgPool, order_no: &str) -> Result<i64, AppError> {
    Ok(
        sqlx::query_scalar("SELECT id FROM orders WHERE order_no = $1")
            .bind(order_no)
            .fetch_one(db)
            .await?,
    )
}

fn url() -> String {
    std::env::var("SKEW_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let schema = format!("skew_{}", uuid::Uuid::new_v4().simple());
    let admin = PgPool::connect(&url()).await?;
    sqlx::query(&format!("CREATE SCHEMA {schema}"))
        .execute(&admin)
        .await?;
    let result = run(&schema).await;
    sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .execute(&admin)
        .await?;
    result
}

async fn run(schema: &str) -> Result<(), Box<dyn std::error::Error>> {
    // The application's pool: sqlx 0.8.
    let opts: PgConnectOptions = url().parse()?;
    let db = PgPoolOptions::new()
        .max_connections(2)
        .connect_with(opts.options([("search_path", schema)]))
        .await?;
    sqlx::raw_sql(
        "CREATE TABLE orders (id BIGSERIAL PRIMARY KEY, order_no TEXT NOT NULL);
         CREATE UNIQUE INDEX uk_skew_order_no ON orders (order_no)",
    )
    .execute(&db)
    .await?;
    // idem's catalog pool: idem's own sqlx (0.9), through the re-export.
    let idem_opts: idem::sqlx::postgres::PgConnectOptions = url().parse()?;
    let catalog_pool = idem::sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect_with(idem_opts.options([("search_path", schema)]))
        .await?;
    let store = Arc::new(FaultyStore::new(MemoryStore::new()));
    let idem = Idem::builder()
        .shared_store(store.clone())
        .namespace(schema)
        .constraints(idem::sql::SqlConstraints::postgres(catalog_pool.clone()))
        .build()?;

    let (first, how1) = reported(create_order(&idem, &db, "A-1")).await;
    let first = first?;
    store.lose_all_keys().await?; // the fast store lost the record
    let (second, how2) = reported(create_order(&idem, &db, "A-1")).await;
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM orders")
        .fetch_one(&db)
        .await?;
    let hits = idem.stats().backstop_hits();
    let verified = idem.verify(&[]).await;
    let blind = Idem::builder()
        .store(MemoryStore::new())
        .constraints(idem::sql::SqlConstraints::postgres(catalog_pool))
        .builtin_violation_detection(false)
        .build()?;
    let blind_verify = blind.verify(&["uk_skew_order_no"]).await;

    println!(
        "skew: app on sqlx 0.8, idem on sqlx 0.9 (PostgreSQL): first {:?}, retry after a lost record {:?} \
         -> {:?}; body runs {}, rows {rows}, backstop hits {hits}; verify {}; verify without \
         built-in detection: {}",
        how1.map(|r| r.outcome()),
        how2.map(|r| r.outcome()),
        second.as_ref().map_err(|e| e.to_string()),
        RUNS.load(Ordering::SeqCst),
        if verified.is_ok() {
            "ok".to_owned()
        } else {
            format!("{verified:?}")
        },
        match &blind_verify {
            Ok(_) => "passed (wrong)".to_owned(),
            Err(e) => format!("failed: {e}"),
        },
    );
    let ok = how2.map(|r| r.outcome()) == Some(CallOutcome::Backstop)
        && second.ok() == Some(first)
        && RUNS.load(Ordering::SeqCst) == 2
        && rows == 1
        && hits == 1
        && verified.is_ok()
        && blind_verify.is_err();
    if !ok {
        return Err("skew: the backstop did not fire on a sqlx 0.8 error".into());
    }
    Ok(())
}
