//! Faults on a test-owned `redis-server`: killed and restarted mid-run, and
//! `FLUSHALL` mid-run (frozen and stalled servers are `redis::stalls`).
//! Backstopped calls use a SQLite table with a unique index through the
//! non-macro `Idem::guard` API.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use idem::store::redis::RedisStore;
use idem::{Error, Fence, Hooks, How, Idem};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use tokio::sync::Mutex;

use crate::support::redis_server::RedisServer;

#[derive(Debug, thiserror::Error)]
enum AppError {
    #[error(transparent)]
    Idem(#[from] Error),
    #[error("database: {0}")]
    Db(#[source] sqlx::Error),
}

/// A business database: one row per order, unique on the order number.
struct Business {
    pool: SqlitePool,
    path: std::path::PathBuf,
    inserts: AtomicUsize,
}

impl Business {
    async fn new() -> Arc<Self> {
        let path =
            std::env::temp_dir().join(format!("idem-redis-{}.db", uuid::Uuid::new_v4().simple()));
        let opts = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(opts)
            .await
            .unwrap();
        sqlx::query("CREATE TABLE orders (order_no TEXT NOT NULL, body TEXT NOT NULL)")
            .execute(&pool)
            .await
            .unwrap();
        sqlx::query("CREATE UNIQUE INDEX uk_order_no ON orders(order_no)")
            .execute(&pool)
            .await
            .unwrap();
        Arc::new(Business {
            pool,
            path,
            inserts: AtomicUsize::new(0),
        })
    }

    async fn rows(&self) -> (i64, i64) {
        sqlx::query_as("SELECT COUNT(*), COUNT(DISTINCT order_no) FROM orders")
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// The guarded call: insert first (the backstop), `on_conflict` loads the row.
    async fn create(
        self: &Arc<Self>,
        idem: &Idem,
        order: u32,
    ) -> Result<idem::Outcome<String>, AppError> {
        let no = format!("o-{order}");
        let (me, me2) = (Arc::clone(self), Arc::clone(self));
        let (no1, no2) = (no.clone(), no.clone());
        let hooks = Hooks::new()
            .detect(idem::std_error)
            .on_conflict(move || async move {
                let (body,): (String,) =
                    sqlx::query_as("SELECT body FROM orders WHERE order_no = ?")
                        .bind(&no2)
                        .fetch_one(&me2.pool)
                        .await
                        .map_err(AppError::Db)?;
                Ok(body)
            });
        let guard = idem.guard("order-create", &[&no]);
        // 3 × the default 1 s op timeout: the lease / 3 clamp leaves it whole.
        guard
            .lease(Duration::from_secs(3))
            .backstop("uk_order_no")
            .degrade_to_backstop()
            .run_fenced_with(hooks, |_| async move {
                let body = format!("order {no1}");
                sqlx::query("INSERT INTO orders (order_no, body) VALUES (?, ?)")
                    .bind(&no1)
                    .bind(&body)
                    .execute(&me.pool)
                    .await
                    .map_err(AppError::Db)?;
                me.inserts.fetch_add(1, Ordering::SeqCst);
                Ok(body)
            })
            .await
    }
}

impl Drop for Business {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.path.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

pub(crate) fn idem_on(store: RedisStore) -> Idem {
    Idem::builder()
        .store(store)
        .namespace("faults")
        .circuit_breaker(5, Duration::from_millis(300))
        .build()
        .unwrap()
}

/// Runs `callers` tasks cycling over `orders` keys until `stop`, collecting how
/// each call ended and its fence.
fn spawn_callers(
    idem: &Idem,
    biz: &Arc<Business>,
    callers: u32,
    orders: u32,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> Vec<tokio::task::JoinHandle<Vec<(u32, How, Fence)>>> {
    (0..callers)
        .map(|c| {
            let (idem, biz, stop) = (idem.clone(), Arc::clone(biz), Arc::clone(&stop));
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut i = c * 7;
                while !stop.load(Ordering::SeqCst) {
                    let order = i % orders;
                    let out = biz.create(&idem, order).await;
                    let out = out.unwrap_or_else(|e| panic!("order {order}: {e:?}"));
                    assert_eq!(out.value(), &format!("order o-{order}"));
                    seen.push((order, out.how(), out.fence()));
                    i += 1;
                    tokio::time::sleep(Duration::from_millis(3)).await;
                }
                seen
            })
        })
        .collect()
}

async fn collect(
    tasks: Vec<tokio::task::JoinHandle<Vec<(u32, How, Fence)>>>,
) -> Vec<(u32, How, Fence)> {
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_and_restarted_with_backstop_no_duplicates() {
    let mut server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    // A finished body's `complete` retries for the whole operation budget (so a
    // blip does not lose its result): keep that budget well inside the 800 ms
    // outage, so callers move on to new orders, degraded, while the server is down.
    let idem = Idem::builder()
        .store(store)
        .namespace("faults")
        .op_timeout(Duration::from_millis(250))
        .circuit_breaker(5, Duration::from_millis(300))
        .build()
        .unwrap();
    let biz = Business::new().await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // 400 orders: new ones keep appearing during the outage (degraded inserts),
    // old ones are repeated (replays, and backstop hits once the records are gone).
    let tasks = spawn_callers(&idem, &biz, 4, 400, Arc::clone(&stop));
    tokio::time::sleep(Duration::from_millis(700)).await;
    server.kill();
    tokio::time::sleep(Duration::from_millis(800)).await;
    server.restart(); // empty: every record is gone
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    stop.store(true, Ordering::SeqCst);
    let seen = collect(tasks).await;

    let (rows, distinct) = biz.rows().await;
    let orders: std::collections::HashSet<u32> = seen.iter().map(|s| s.0).collect();
    assert_eq!(rows, distinct, "zero duplicate business rows");
    assert_eq!(rows as usize, orders.len(), "one row per order called");
    assert_eq!(
        biz.inserts.load(Ordering::SeqCst),
        orders.len(),
        "one successful insert per order"
    );
    let count = |h: How| seen.iter().filter(|s| s.1 == h).count();
    println!(
        "kill/restart: {} calls, executed {}, replayed {}, waited {}, degraded {}, backstop {}",
        seen.len(),
        count(How::Executed),
        count(How::Replayed),
        count(How::Waited),
        count(How::Degraded),
        count(How::Backstop)
    );
    assert!(
        count(How::Degraded) > 0,
        "new orders ran under the backstop during the outage"
    );
    assert!(
        count(How::Backstop) > 0,
        "after the restart the constraint caught lost records"
    );
    assert!(count(How::Replayed) > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_without_backstop_fails_closed() {
    let mut server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let idem = idem_on(store);
    let runs: Arc<Mutex<HashMap<&'static str, u32>>> = Arc::default();
    let call = |id: &'static str| {
        let (idem, runs) = (idem.clone(), Arc::clone(&runs));
        async move {
            idem.guard("pay", &[&id])
                .run(|| async move {
                    *runs.lock().await.entry(id).or_default() += 1;
                    Ok::<_, Error>(id.len())
                })
                .await
        }
    };
    assert_eq!(call("before").await.unwrap().how(), How::Executed);
    server.kill();
    for _ in 0..8 {
        let r = call("during").await;
        assert!(matches!(r, Err(Error::StoreUnavailable { .. })), "{r:?}");
        assert!(matches!(
            call("before").await,
            Err(Error::StoreUnavailable { .. })
        ));
    }
    assert_eq!(
        runs.lock().await.get("during"),
        None,
        "no body runs while the store is down"
    );
    server.restart();
    // The breaker and the reconnection settle within a few seconds.
    let deadline = Instant::now() + Duration::from_secs(10);
    let out = loop {
        match call("during").await {
            Ok(o) => break o,
            Err(Error::StoreUnavailable { .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{e:?}"),
        }
    };
    assert_eq!(out.how(), How::Executed);
    assert_eq!(call("during").await.unwrap().how(), How::Replayed);
    let runs = runs.lock().await;
    assert_eq!(runs.get("during"), Some(&1), "nothing ran twice");
    assert_eq!(runs.get("before"), Some(&1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flushall_mid_run_keeps_fences_and_rows_unique() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let idem = idem_on(store);
    let biz = Business::new().await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tasks = spawn_callers(&idem, &biz, 4, 20, Arc::clone(&stop));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(server.cli(&["FLUSHALL"]).trim(), "OK");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(server.cli(&["FLUSHALL"]).trim(), "OK");
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::SeqCst);
    let seen = collect(tasks).await;

    let (rows, distinct) = biz.rows().await;
    assert_eq!((rows, distinct), (20, 20), "zero duplicate business rows");
    assert_eq!(biz.inserts.load(Ordering::SeqCst), 20);
    let backstops = seen.iter().filter(|s| s.1 == How::Backstop).count();
    assert!(
        backstops > 0,
        "after FLUSHALL the constraint caught the lost records"
    );
    // Claims of a key (executed or backstopped calls each made one) have growing fences.
    let mut per_key: HashMap<u32, Vec<Fence>> = HashMap::new();
    for (order, how, fence) in &seen {
        if matches!(how, How::Executed | How::Backstop) {
            per_key.entry(*order).or_default().push(*fence);
        }
    }
    let mut reclaimed = 0;
    for (order, mut fences) in per_key {
        let n = fences.len();
        fences.sort();
        fences.dedup();
        assert_eq!(
            fences.len(),
            n,
            "order {order}: a fence was handed out twice"
        );
        reclaimed += usize::from(n > 1);
    }
    assert!(reclaimed > 0, "some keys were claimed again after FLUSHALL");
}
