//! A flash sale: one-time tokens on the order form, a distributed lock plus a
//! fenced write for the stock deduction. Runs on the embedded default (memory
//! store + SQLite), or on Redis when `REDIS_URL` is set (feature `redis`).
//!
//! ```text
//! cargo run --example flash_sale
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --example flash_sale --features redis
//! ```
//!
//! 30 buyers each get a form token and submit their order 5 times at once
//! (double clicks, retries) for an item with 20 in stock. Verdicts: every buyer
//! ran at most once, 20 orders and 0 left (no oversell), and every stock write
//! carried a fence. Exits non-zero if any verdict fails.

mod support;

use std::sync::Arc;
use std::time::Duration;

use idem::lock::{FencedUpdate, FencedWrite};
use idem::{Fence, Idem, MemoryStore};
use sqlx::SqlitePool;
use sqlx::sqlite::SqlitePoolOptions;

const STOCK: i64 = 20;
const BUYERS: u32 = 30;
const CLICKS: u32 = 5;

#[derive(Debug, thiserror::Error)]
enum SaleError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("sold out")]
    SoldOut,
    #[error("stale lock holder: the deduction was fenced off")]
    Stale,
}

/// One order per (buyer, form token): the token is spent when the order
/// starts and given back if it fails; every click of the same form shares the
/// idempotency key.
#[idem::idempotent(key = "flash-order:<buyer>", lease = "5s", token = "<form_token>", handle = idem)]
async fn place_order(
    idem: &Idem,
    db: &SqlitePool,
    buyer: u32,
    form_token: &str,
) -> Result<i64, SaleError> {
    deduct(idem, db, "sku-1", Fence::NONE).await?;
    let id = sqlx::query_scalar("INSERT INTO orders (buyer) VALUES (?) RETURNING id")
        .bind(buyer)
        .fetch_one(db)
        .await?;
    Ok(id)
}

/// The deduction under a lock on the SKU; the write carries the lock's fence,
/// so a holder whose lease lapsed (a GC pause, a partition) cannot write after
/// the next holder did.
#[idem::distributed_lock(key = "lock:deduct:sku:<sku>", lease = "3s", wait = "10s", max_hold = "60s", handle = idem)]
async fn deduct(idem: &Idem, db: &SqlitePool, sku: &str, fence: Fence) -> Result<(), SaleError> {
    let qty: i64 = sqlx::query_scalar("SELECT qty FROM stock WHERE sku = ?")
        .bind(sku)
        .fetch_one(db)
        .await?;
    if qty <= 0 {
        return Err(SaleError::SoldOut);
    }
    let upd = FencedUpdate::new(idem::db::Dialect::Sqlite, "stock", "fence")?;
    let sql = upd.sql("qty = qty - 1", "sku = ?", fence);
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(sku)
        .execute(db)
        .await?
        .rows_affected();
    match FencedWrite::from_rows(rows) {
        FencedWrite::Applied { .. } => Ok(()),
        FencedWrite::Stale => Err(SaleError::Stale),
    }
}

async fn handle() -> Result<Idem, Box<dyn std::error::Error>> {
    // A fresh namespace per run: a second run on the same Redis starts clean.
    let ns = format!("flash-{}", support::run_id());
    let builder = Idem::builder().namespace(ns.clone());
    if let Some(url) = support::var(support::REDIS_URL) {
        #[cfg(feature = "redis")]
        {
            support::print_backends(&[
                (
                    "records",
                    format!("Redis at {} (namespace `{ns}`)", support::redact(&url)),
                ),
                ("stock", "SQLite in memory".into()),
            ]);
            let store = idem::RedisStore::connect(&url).await?;
            return Ok(builder.store(store).build()?);
        }
        #[cfg(not(feature = "redis"))]
        return Err(support::needs_feature(support::REDIS_URL, &url, "redis", "flash_sale").into());
    }
    support::print_backends(&[
        (
            "records",
            format!("in-process memory store (namespace `{ns}`)"),
        ),
        ("stock", "SQLite in memory".into()),
    ]);
    Ok(builder.store(MemoryStore::new()).build()?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let idem = Arc::new(handle().await?);
    let db = SqlitePoolOptions::new()
        .max_connections(1)
        .test_before_acquire(false)
        .connect("sqlite::memory:")
        .await?;
    sqlx::query(
        "CREATE TABLE stock (sku TEXT PRIMARY KEY, qty INTEGER NOT NULL, fence INTEGER NOT NULL)",
    )
    .execute(&db)
    .await?;
    sqlx::query(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY AUTOINCREMENT, buyer INTEGER NOT NULL)",
    )
    .execute(&db)
    .await?;
    sqlx::query("INSERT INTO stock VALUES ('sku-1', ?, 0)")
        .bind(STOCK)
        .execute(&db)
        .await?;

    let mut clicks = Vec::new();
    for buyer in 0..BUYERS {
        // The token goes into the order form the buyer submits.
        let token = idem
            .tokens()
            .issue("token:flash-order", Duration::from_secs(600))
            .await?
            .into_string();
        for _ in 0..CLICKS {
            let (idem, db, token) = (idem.clone(), db.clone(), token.clone());
            clicks.push(tokio::spawn(async move {
                place_order(&idem, &db, buyer, &token).await
            }));
        }
    }
    let (mut placed, mut sold_out, mut other) = (0, 0, 0);
    for c in clicks {
        match c.await? {
            Ok(_) => placed += 1,
            Err(SaleError::SoldOut) => sold_out += 1,
            Err(SaleError::Idem(
                idem::Error::TokenInvalid { .. } | idem::Error::InProgress { .. },
            )) => other += 1,
            Err(e) => return Err(e.into()),
        }
    }
    let orders: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM orders")
        .fetch_one(&db)
        .await?;
    let buyers: i64 = sqlx::query_scalar("SELECT COUNT(DISTINCT buyer) FROM orders")
        .fetch_one(&db)
        .await?;
    let (left, fence): (i64, i64) = sqlx::query_as("SELECT qty, fence FROM stock")
        .fetch_one(&db)
        .await?;
    println!(
        "clicks: {} → ok {placed} (replays included), sold out {sold_out}, refused {other}",
        BUYERS * CLICKS
    );
    println!("orders {orders} from {buyers} buyers; stock left {left}; last fence {fence}");
    let verdicts = [
        ("one order per buyer at most", orders == buyers),
        (
            "no oversell: orders + stock left = initial stock",
            orders + left == STOCK,
        ),
        ("sold out exactly", left == 0 && orders == STOCK),
        ("stock writes carried a fence", fence > 0),
    ];
    let mut ok = true;
    for (name, pass) in verdicts {
        println!("[{}] {name}", if pass { "PASS" } else { "FAIL" });
        ok &= pass;
    }
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
