//! The four acceptance rounds of an idempotent order-creation endpoint, on the
//! embedded default: an in-process idempotency store in front of a SQLite file
//! whose unique index is the final backstop. No server needed.
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! Rounds (from the seed article's acceptance checklist):
//! 1. the same request 10 times in a row;
//! 2. 50 concurrent copies of one request;
//! 3. a first attempt that times out *after* its insert committed, then a retry;
//! 4. the idempotency store goes down: the unique index alone keeps one order.
//!
//! Exits non-zero if any verdict fails.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use idem::{FaultyStore, Idem, MemoryStore};
use serde::{Deserialize, Serialize};
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};

/// What the endpoint returns; stored by idem and replayed to duplicates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Order {
    id: i64,
    order_no: String,
    amount: i64,
}

/// The service's error type. `sqlx::Error` cannot implement `From<idem::Error>`,
/// so services wrap both.
#[derive(Debug, thiserror::Error)]
enum ShopError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("payment gateway timed out")]
    Timeout,
}

/// The business side: the orders table plus two switches the demo flips.
struct Shop {
    db: SqlitePool,
    executions: AtomicUsize,
    time_out_after_insert: AtomicBool,
}

/// Creates an order once per (user, request id), whatever the retries.
#[idem::idempotent(
    key = "order-create:<user_id>:<req_id>",
    ttl = "24h",
    backstop = "uk_orders_order_no",
    on_conflict = find_order,
    degrade = "backstop"
)]
async fn create_order(
    shop: &Shop,
    user_id: u64,
    req_id: &str,
    amount: i64,
) -> Result<Order, ShopError> {
    shop.executions.fetch_add(1, Ordering::SeqCst);
    let order_no = format!("{user_id}-{req_id}");
    // The constrained insert is the body's first effect (required by `degrade`).
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO orders (order_no, user_id, amount) VALUES (?, ?, ?) RETURNING id",
    )
    .bind(&order_no)
    .bind(user_id as i64)
    .bind(amount)
    .fetch_one(&shop.db)
    .await?;
    // Slow enough that concurrent copies really overlap.
    tokio::time::sleep(Duration::from_millis(50)).await;
    if shop.time_out_after_insert.swap(false, Ordering::SeqCst) {
        return Err(ShopError::Timeout); // the row is committed, the caller saw a failure
    }
    Ok(Order {
        id,
        order_no,
        amount,
    })
}

/// After a unique violation on `uk_orders_order_no`: load the order that exists.
async fn find_order(
    shop: &Shop,
    user_id: &u64,
    req_id: &str,
    _amount: &i64,
) -> Result<Order, ShopError> {
    let order_no = format!("{user_id}-{req_id}");
    let (id, amount): (i64, i64) =
        sqlx::query_as("SELECT id, amount FROM orders WHERE order_no = ?")
            .bind(&order_no)
            .fetch_one(&shop.db)
            .await?;
    Ok(Order {
        id,
        order_no,
        amount,
    })
}

#[derive(Default)]
struct Round {
    requests: usize,
    replays: usize,
    errors: usize,
    orders: Vec<Order>,
}

impl Round {
    fn add(&mut self, r: Result<Order, ShopError>, replay: bool) {
        self.requests += 1;
        match r {
            Ok(o) => {
                self.replays += usize::from(replay);
                self.orders.push(o);
            }
            Err(_) => self.errors += 1,
        }
    }
    fn one_order(&self) -> bool {
        self.orders.windows(2).all(|w| w[0] == w[1])
    }
}

async fn rows(shop: &Shop, order_no: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT COUNT(*) FROM orders WHERE order_no = ?")
        .bind(order_no)
        .fetch_one(&shop.db)
        .await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("idem-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = SqlitePoolOptions::new()
        .max_connections(4)
        .test_before_acquire(false) // a ping per acquire costs 17–29% of a statement here
        .connect_with(
            SqliteConnectOptions::new()
                .filename(dir.join("shop.db"))
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .busy_timeout(Duration::from_secs(5)),
        )
        .await?;
    sqlx::query(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, order_no TEXT NOT NULL, user_id INTEGER NOT NULL, amount INTEGER NOT NULL)",
    )
    .execute(&db)
    .await?;
    sqlx::query("CREATE UNIQUE INDEX uk_orders_order_no ON orders (order_no)")
        .execute(&db)
        .await?;

    // The fast store (here in-process; Redis in production) wrapped so round 4 can
    // take it down. The SQLite catalog names the index behind a unique violation.
    let store = Arc::new(FaultyStore::new(MemoryStore::new()));
    let handle = Idem::builder()
        .shared_store(store.clone())
        .namespace("shop")
        .constraints(idem::sql::SqlConstraints::sqlite(db.clone()))
        .build()?;
    let stats = handle.clone();
    idem::install(handle).map_err(|_| "an idem handle was already installed")?;
    println!(
        "backends: records in the in-process memory store (namespace `shop`); orders in SQLite {}",
        dir.join("shop.db").display()
    );
    for w in stats.verify(&[]).await? {
        println!("verify: {}", w.0);
    }

    let shop = Arc::new(Shop {
        db,
        executions: AtomicUsize::new(0),
        time_out_after_insert: AtomicBool::new(false),
    });
    let mut table = Vec::new();

    // Round 1: a double-clicking user, ten times in a row.
    let before = shop.executions.load(Ordering::SeqCst);
    let mut r = Round::default();
    for i in 0..10 {
        r.add(create_order(&shop, 1001, "req-a", 4200).await, i > 0);
    }
    let runs = shop.executions.load(Ordering::SeqCst) - before;
    let n = rows(&shop, "1001-req-a").await?;
    let ok = runs == 1 && r.errors == 0 && r.one_order() && n == 1;
    table.push(("10 sequential repeats", r, runs, n, ok));

    // Round 2: a gateway retry storm, 50 copies at once.
    let before = shop.executions.load(Ordering::SeqCst);
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..50 {
        let (shop, barrier) = (shop.clone(), barrier.clone());
        tasks.spawn(async move {
            barrier.wait().await;
            create_order(&shop, 1002, "req-b", 990).await
        });
    }
    let mut r = Round::default();
    for res in tasks.join_all().await {
        r.add(res, false);
    }
    let runs = shop.executions.load(Ordering::SeqCst) - before;
    r.replays = r.requests - r.errors - runs;
    let n = rows(&shop, "1002-req-b").await?;
    let ok = runs == 1 && r.errors == 0 && r.one_order() && n == 1;
    table.push(("50 concurrent, one key", r, runs, n, ok));

    // Round 3: the first attempt commits its insert, then times out; the client retries.
    let before = shop.executions.load(Ordering::SeqCst);
    shop.time_out_after_insert.store(true, Ordering::SeqCst);
    let mut r = Round::default();
    let first = create_order(&shop, 1003, "req-c", 1500).await;
    let first_failed = matches!(first, Err(ShopError::Timeout));
    r.add(first, false);
    r.add(create_order(&shop, 1003, "req-c", 1500).await, true);
    let runs = shop.executions.load(Ordering::SeqCst) - before;
    let n = rows(&shop, "1003-req-c").await?;
    let ok = first_failed && r.orders.len() == 1 && n == 1;
    table.push(("fail after write, retry", r, runs, n, ok));

    // Round 4: the idempotency store is down; the unique index decides.
    store.set_unavailable(true);
    let before = shop.executions.load(Ordering::SeqCst);
    let mut r = Round::default();
    for _ in 0..10 {
        r.add(create_order(&shop, 1004, "req-d", 7700).await, true);
    }
    r.replays -= 1; // the first request created the order
    let runs = shop.executions.load(Ordering::SeqCst) - before;
    store.set_unavailable(false);
    let n = rows(&shop, "1004-req-d").await?;
    let ok = r.errors == 0 && r.one_order() && n == 1;
    table.push(("store down, backstop only", r, runs, n, ok));

    println!();
    println!(
        "{:<27} {:>8} {:>11} {:>8} {:>7} {:>7}  verdict",
        "round", "requests", "body runs", "replays", "errors", "orders"
    );
    let mut all_ok = true;
    for (name, r, runs, n, ok) in &table {
        println!(
            "{:<27} {:>8} {:>11} {:>8} {:>7} {:>7}  {}",
            name,
            r.requests,
            runs,
            r.replays,
            r.errors,
            n,
            if *ok { "PASS" } else { "FAIL" }
        );
        all_ok &= ok;
    }
    let s = stats.stats();
    println!();
    println!(
        "monitoring: {} calls, interception rate {:.1}%, backstop hits {}, degraded {}",
        s.calls(),
        100.0 * s.interception_rate(),
        s.backstop_hits(),
        s.count("degraded")
    );
    if let Some(top) = s.top_keys.first() {
        println!("most repeated key: {} ({} duplicates)", top.key, top.count);
    }
    let _ = std::fs::remove_dir_all(&dir);
    if !all_ok {
        eprintln!("a verdict failed");
        std::process::exit(1);
    }
    Ok(())
}
