//! The load of a failover drill, and its tally.
//!
//! Two handles share one store: `plain` (the body inserts into a table without
//! a unique index, so a second run is a second row) and `backed` (the same body
//! on a table with a unique index, declared as the backstop, `on_conflict`
//! loading the row). Both fail closed. Every body run is counted per key.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idem::{Error, Hooks, Idem, Store};
use sqlx::sqlite::SqlitePool;

use crate::support::tempdir::TempDir;

#[derive(Debug, thiserror::Error)]
enum AppError {
    #[error(transparent)]
    Idem(#[from] Error),
    #[error("database: {0}")]
    Db(#[source] sqlx::Error),
}

/// What a drill counted, per handle: body runs beyond one per key, business
/// rows beyond one per key, calls that failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Count {
    pub(crate) extra_runs: u64,
    pub(crate) extra_rows: u64,
    pub(crate) errors: u64,
}

pub(crate) struct Drill {
    plain: Idem,
    backed: Idem,
    pool: SqlitePool,
    _dir: TempDir,
    runs: Arc<Mutex<HashMap<(bool, u32), u64>>>,
    errors: Arc<Mutex<[u64; 2]>>,
}

impl Drill {
    pub(crate) async fn new(store: Arc<dyn Store>) -> Drill {
        let (pool, dir) = crate::support::sqlite_business_db().await;
        sqlx::query("CREATE TABLE plain (order_no TEXT NOT NULL)")
            .execute(&pool)
            .await
            .unwrap();
        let handle = |store: Arc<dyn Store>| {
            Idem::builder()
                .shared_store(store)
                .namespace(crate::support::unique_ns("failover"))
                .build()
                .unwrap()
        };
        Drill {
            plain: handle(Arc::clone(&store)),
            backed: handle(store),
            pool,
            _dir: dir,
            runs: Arc::default(),
            errors: Arc::default(),
        }
    }

    /// One call of `order` on the handle with (`backed`) or without the backstop.
    pub(crate) async fn call(&self, backed: bool, order: u32) -> Result<(), AppErrorShown> {
        let no = format!("o-{order}");
        let (pool, pool2, runs) = (self.pool.clone(), self.pool.clone(), Arc::clone(&self.runs));
        let (no1, no2) = (no.clone(), no.clone());
        let guard = if backed { &self.backed } else { &self.plain }.guard("order", &[&no]);
        let guard = guard.lease(Duration::from_secs(3));
        let body = move |_| async move {
            *runs.lock().unwrap().entry((backed, order)).or_default() += 1;
            let sql = if backed {
                "INSERT INTO orders (order_no, amount) VALUES (?, 1)"
            } else {
                "INSERT INTO plain (order_no) VALUES (?)"
            };
            sqlx::query(sql)
                .bind(&no1)
                .execute(&pool)
                .await
                .map_err(AppError::Db)?;
            Ok::<_, AppError>(no1)
        };
        let r = if backed {
            let hooks = Hooks::new()
                .detect(idem::std_error)
                .on_conflict(move || async move {
                    let (n,): (String,) =
                        sqlx::query_as("SELECT order_no FROM orders WHERE order_no = ?")
                            .bind(&no2)
                            .fetch_one(&pool2)
                            .await
                            .map_err(AppError::Db)?;
                    Ok(n)
                });
            guard
                .backstop("uk_order_no")
                .run_fenced_with(hooks, body)
                .await
        } else {
            guard.run_fenced(body).await
        };
        match r {
            Ok(_) => Ok(()),
            Err(e) => {
                self.errors.lock().unwrap()[usize::from(backed)] += 1;
                Err(AppErrorShown(e.to_string()))
            }
        }
    }

    /// Calls `orders` once each on both handles, 64 calls at a time.
    pub(crate) async fn round(self: &Arc<Self>, orders: std::ops::Range<u32>) {
        let callers = Arc::new(tokio::sync::Semaphore::new(64));
        let mut all = tokio::task::JoinSet::new();
        for order in orders {
            for backed in [false, true] {
                let (me, callers) = (Arc::clone(self), Arc::clone(&callers));
                all.spawn(async move {
                    let _turn = callers.acquire().await;
                    me.call(backed, order).await
                });
            }
        }
        while all.join_next().await.is_some() {}
    }

    /// The idem key of order `n` (on either handle: they differ only in namespace).
    pub(crate) fn order_key(&self, n: u32) -> String {
        self.plain
            .key("order", &[&format!("o-{n}")])
            .as_str()
            .to_owned()
    }

    /// The idem key of probe `n` (see [`recovered`](Self::recovered)).
    pub(crate) fn probe_key(&self, n: u32) -> String {
        self.plain.key("probe", &[&n]).as_str().to_owned()
    }

    /// From `since` until a first call on a new key succeeds on both handles
    /// (tried every 50 ms, 60 s at most), on the probe keys `probes` picks (a
    /// cluster drill picks keys of the failed master's slots). The probe keys
    /// are not counted.
    pub(crate) async fn recovered(&self, since: Instant, probes: impl Fn(u32) -> bool) -> Duration {
        let mut probe = 0u32;
        loop {
            assert!(
                since.elapsed() < Duration::from_secs(60),
                "no recovery in 60 s"
            );
            // Probes 1 to 1000, again and again (a probe already served replays).
            probe = probe % 1000 + 1;
            if !probes(probe) {
                continue;
            }
            // Both handles: each has its own circuit breaker.
            let mut served = 0;
            for idem in [&self.plain, &self.backed] {
                let guard = idem.guard("probe", &[&probe]);
                if guard.run(|| async { Ok::<_, Error>(()) }).await.is_ok() {
                    served += 1;
                }
            }
            if served == 2 {
                return since.elapsed();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// How many of `orders` ran their body on the handle without (`false`) or
    /// with the backstop: the keys whose claims the store took (a claim it
    /// did not trust failed closed and ran nothing).
    pub(crate) fn ran(&self, backed: bool, orders: std::ops::Range<u32>) -> u64 {
        let runs = self.runs.lock().unwrap();
        orders
            .filter(|&o| runs.get(&(backed, o)).is_some_and(|&n| n > 0))
            .count() as u64
    }

    /// The tally for the handle without (`false`) or with the backstop.
    pub(crate) async fn count(&self, backed: bool) -> Count {
        let extra_runs = self
            .runs
            .lock()
            .unwrap()
            .iter()
            .filter(|((b, _), _)| *b == backed)
            .map(|(_, n)| n.saturating_sub(1))
            .sum();
        let table = if backed { "orders" } else { "plain" };
        let (rows, distinct): (i64, i64) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*), COUNT(DISTINCT order_no) FROM {table}"
        )))
        .fetch_one(&self.pool)
        .await
        .unwrap();
        Count {
            extra_runs,
            extra_rows: u64::try_from(rows - distinct).unwrap(),
            errors: self.errors.lock().unwrap()[usize::from(backed)],
        }
    }
}

/// A failed call's message (the error type stays private to the drill).
#[derive(Debug)]
pub(crate) struct AppErrorShown(#[allow(dead_code)] pub(crate) String);

/// The sizes of a drill: keys finished before the failover, keys first called
/// while the replicas lag, and repeats of every key after it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Size {
    pub(crate) before: u32,
    pub(crate) across: u32,
    pub(crate) repeats: u32,
}

impl Size {
    /// Small in CI, large with `IDEM_STRESS=1`.
    pub(crate) fn pick() -> Size {
        if crate::support::sql::stress() {
            Size {
                before: 1000,
                across: 200,
                repeats: 3,
            }
        } else {
            Size {
                before: 20,
                across: 10,
                repeats: 2,
            }
        }
    }
}

/// One row of the measured table.
pub(crate) fn report(
    setting: &str,
    mode: &str,
    size: Size,
    plain: Count,
    backed: Count,
    recovery: Duration,
) {
    eprintln!(
        "FAILOVER | {setting} | {mode} | {before}+{across} keys x{repeats} | no backstop: {pr} extra runs, {pw} extra rows, {pe} errors | backstop: {br} extra runs, {bw} extra rows, {be} errors | recovery {rec:.1} s",
        before = size.before,
        across = size.across,
        repeats = size.repeats,
        pr = plain.extra_runs,
        pw = plain.extra_rows,
        pe = plain.errors,
        br = backed.extra_runs,
        bw = backed.extra_rows,
        be = backed.errors,
        rec = recovery.as_secs_f64(),
    );
}
