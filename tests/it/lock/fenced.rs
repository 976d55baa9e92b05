//! The lock's fences against a holder whose lease lapsed: the forced
//! interleaving (A's renewal blocked, A paused past its lease, B acquires and
//! writes, A resumes and writes) with a fenced `UPDATE` on PostgreSQL, 100 trials
//! per store; and fences that keep growing across `FLUSHALL` on a test-owned
//! Redis.

use std::sync::Arc;
use std::time::Duration;

use idem::lock::{FencedUpdate, FencedWrite};
use idem::store::Store;
use idem::{Error, FaultyStore, Idem};

fn handle_in(store: Arc<dyn Store>, ns: &str) -> Idem {
    Idem::builder()
        .shared_store(store)
        .namespace(ns)
        .op_timeout(Duration::from_millis(800))
        .build()
        .unwrap()
}

/// One trial: what A saw after resuming, and what each write did.
#[derive(Debug, PartialEq)]
struct Trial {
    a_valid: bool,
    a_write: FencedWrite,
    b_write: FencedWrite,
    holder: String,
}

/// 100 concurrent trials, each on its own lock key and row: A takes the lock
/// through a store wrapper whose connection then goes dark (renewal blocked),
/// stays paused until B (on the healthy store) took the lapsed lock and wrote
/// with its fence, then writes with its own. A's write is rejected and A's grant
/// is no longer valid in every trial.
pub async fn stale_holder_is_fenced_off(store: Arc<dyn Store>) {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .connect(&crate::support::sql::pg_url())
        .await
        .expect("postgres");
    let table = format!("lock_fenced_{}", crate::support::sql::suffix());
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE TABLE {table} (id BIGINT PRIMARY KEY, holder TEXT NOT NULL, fence BIGINT NOT NULL)"
    )))
    .execute(&pool)
    .await
    .unwrap();
    let upd = FencedUpdate::new(idem::db::Dialect::Postgres, &table, "fence").unwrap();
    let ns = crate::support::unique_ns("lock-fenced");
    let lease = Duration::from_secs(1);
    let mut trials = Vec::new();
    for i in 0..100i64 {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO {table} VALUES ($1, '', 0)"
        )))
        .bind(i)
        .execute(&pool)
        .await
        .unwrap();
        let a_store = Arc::new(FaultyStore::new(store.clone()));
        let a = handle_in(a_store.clone(), &ns);
        let b = handle_in(store.clone(), &ns);
        let (pool, upd, table) = (pool.clone(), upd.clone(), table.clone());
        trials.push(tokio::spawn(async move {
            let write = |who: &'static str, fence| {
                let (pool, sql) = (pool.clone(), upd.sql("holder = $1", "id = $2", fence));
                async move {
                    let n = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(who)
                        .bind(i)
                        .execute(&pool)
                        .await
                        .unwrap()
                        .rows_affected();
                    FencedWrite::from_rows(n)
                }
            };
            let (acquired_tx, acquired_rx) = tokio::sync::oneshot::channel();
            let (written_tx, written_rx) = tokio::sync::oneshot::channel();
            let a_task = async {
                a.lock("lock:fenced", &[&i])
                    .lease(lease)
                    .wait(Duration::ZERO)
                    .run(|grant| async move {
                        a_store.set_unavailable(true); // renewal blocked from now on
                        let _ = acquired_tx.send(());
                        // Paused until B has taken over and written (bounded).
                        let _ = tokio::time::timeout(Duration::from_secs(10), written_rx).await;
                        let valid = grant.is_valid();
                        Ok::<_, Error>((valid, write("A", grant.fence()).await))
                    })
                    .await
                    .unwrap()
            };
            let b_task = async {
                acquired_rx.await.unwrap();
                let w = b
                    .lock("lock:fenced", &[&i])
                    .lease(lease)
                    .wait(lease * 4)
                    .run(|grant| async move { Ok::<_, Error>(write("B", grant.fence()).await) })
                    .await
                    .unwrap();
                let _ = written_tx.send(());
                w
            };
            let ((a_valid, a_write), b_write) = tokio::join!(a_task, b_task);
            let holder: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT holder FROM {table} WHERE id = $1"
            )))
            .bind(i)
            .fetch_one(&pool)
            .await
            .unwrap();
            Trial {
                a_valid,
                a_write,
                b_write,
                holder,
            }
        }));
    }
    let mut ok = 0;
    for t in trials {
        let t = t.await.unwrap();
        assert_eq!(
            t,
            Trial {
                a_valid: false,
                a_write: FencedWrite::Stale,
                b_write: FencedWrite::Applied { rows: 1 },
                holder: "B".into(),
            }
        );
        ok += 1;
    }
    assert_eq!(ok, 100);
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE {table}")))
        .execute(&pool)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_holder_is_fenced_off_memory() {
    stale_holder_is_fenced_off(Arc::new(idem::MemoryStore::new())).await;
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_holder_is_fenced_off_redis() {
    stale_holder_is_fenced_off(crate::support::stores::redis().await).await;
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_holder_is_fenced_off_redis_cluster() {
    stale_holder_is_fenced_off(crate::support::stores::redis_cluster().await).await;
}

/// Fences of one lock key keep growing across `FLUSHALL` (20 rounds on a
/// test-owned server): the server clock, not a stored counter, is their source.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fences_grow_across_flushall() {
    use crate::support::redis_server::{RedisServer, cli};
    let server = RedisServer::start();
    let store = idem::store::redis::RedisStore::connect(&server.url())
        .await
        .unwrap();
    let idem = handle_in(Arc::new(store), "flush");
    let mut last = idem::Fence::NONE;
    for round in 0..20 {
        let f = idem
            .lock("lock:flush", &[&"k"])
            .lease(Duration::from_secs(1))
            .run(|grant| async move { Ok::<_, Error>(grant.fence()) })
            .await
            .unwrap();
        assert!(f > last, "round {round}: {f:?} after {last:?}");
        last = f;
        assert_eq!(cli(server.port, &["FLUSHALL"]).trim(), "OK");
    }
}
