//! The caller's database of the SQL techniques: a real SQLite in memory, one
//! per simulation thread (its runtime beside it), idem's tables migrated, the
//! business tables emptied before each seed. Real transactions, savepoints,
//! commit and rollback: nothing of them is modelled, so the simulation finds
//! what the database would do.
//!
//! Cancellation without timers: [`cut_after`] drops a future at its n-th
//! `Pending`, i.e. at about its n-th await on the database. (A statement whose
//! answer streams may return `Pending` once or twice depending on the worker
//! thread's timing, so a cut after the first await can land one step off; the
//! invariants hold wherever it lands.)

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::str::FromStr;
use std::task::Poll;

use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};

const TABLES: [&str; 5] = [
    "CREATE TABLE t_sku (sku TEXT NOT NULL PRIMARY KEY, version INTEGER NOT NULL, stock INTEGER NOT NULL, last_req TEXT)",
    "CREATE TABLE t_biz (id INTEGER PRIMARY KEY AUTOINCREMENT, k TEXT NOT NULL, call INTEGER NOT NULL)",
    "CREATE TABLE t_once (id INTEGER PRIMARY KEY AUTOINCREMENT, k TEXT NOT NULL)",
    "CREATE UNIQUE INDEX uk_once_k ON t_once (k)",
    "CREATE TABLE t_once_item (k TEXT NOT NULL)",
];

thread_local! {
    static DB: RefCell<Option<(tokio::runtime::Runtime, SqlitePool)>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread's database (made on first use), emptied first.
pub(crate) fn with_db<R, F, Fut>(f: F) -> R
where
    F: FnOnce(SqlitePool) -> Fut,
    Fut: Future<Output = R>,
{
    DB.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a current-thread runtime");
            let pool = rt.block_on(open());
            *slot = Some((rt, pool));
        }
        let (rt, pool) = slot.as_ref().expect("opened");
        rt.block_on(async {
            for t in ["t_sku", "t_biz", "t_once", "t_once_item", "idem_records"] {
                sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM {t}")))
                    .execute(pool)
                    .await
                    .expect("empty a table");
            }
            f(pool.clone()).await
        })
    })
}

async fn open() -> SqlitePool {
    let opts = SqliteConnectOptions::from_str("sqlite::memory:").expect("an in-memory url");
    // One connection, kept for ever: an in-memory database lives with it.
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .min_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .test_before_acquire(false)
        .connect_with(opts)
        .await
        .expect("SQLite in memory");
    for t in TABLES {
        sqlx::query(t).execute(&pool).await.expect("create a table");
    }
    idem::sql::SqlStore::sqlite(pool.clone())
        .migrate()
        .await
        .expect("migrate idem's tables");
    pool
}

/// `fut`'s output, or `None` if it was still pending at its `n`-th `Pending`
/// (then it is dropped there: the caller went away at that await).
pub(crate) async fn cut_after<F: Future>(n: Option<u32>, fut: F) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let mut left = n;
    std::future::poll_fn(move |cx| match fut.as_mut().poll(cx) {
        Poll::Ready(v) => Poll::Ready(Some(v)),
        Poll::Pending => match left.as_mut() {
            Some(0) => Poll::Ready(None),
            Some(l) => {
                *l -= 1;
                Poll::Pending
            }
            None => Poll::Pending,
        },
    })
    .await
}

/// The first integer column of the first row (a count, a stock).
pub(crate) async fn int(pool: &SqlitePool, sql: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(pool)
        .await
        .expect("read an integer")
}
