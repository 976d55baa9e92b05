//! Four OS processes share the same 500 keys through one PostgreSQL store: each
//! key's body runs once in total and the business table gets one row per key.
//!
//! The workers are this test binary run again with `IDEM_SQL_WORKER` set,
//! selecting [`worker_process_entry`] only; in a normal run that entry returns at
//! once (it is the child's `main`, not a test of its own).

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use idem::db::Dialect;

use idem::store::sql::{SqlStore, TableNames};
use idem::{Hooks, How, Idem};

use crate::support::sql::{Biz, BizPool, Fixture, pg_url};

const KEYS: usize = 500;
const PROCS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_one_row_per_key() {
    let fx = Fixture::new(Dialect::Postgres).await;
    let biz = Biz::new(&fx).await;
    let BizPool::Pg(pool) = &biz.pool else {
        unreachable!()
    };
    // Each worker reports how many bodies it ran (created here: concurrent
    // `CREATE TABLE IF NOT EXISTS` races on PostgreSQL's catalog).
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE TABLE {}.worker_runs (worker INT PRIMARY KEY, runs INT8 NOT NULL)",
        fx.names.schema_name().unwrap()
    )))
    .execute(pool)
    .await
    .unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCS)
        .map(|i| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "sql::procs::worker_process_entry",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("IDEM_SQL_WORKER", i.to_string())
                .env("IDEM_SQL_SCHEMA", fx.names.schema_name().unwrap())
                .env("IDEM_SQL_BIZ", format!("{}:{}", biz.table, biz.index))
                // The harness chatter of four children; failures still show on stderr.
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn worker")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a worker failed");
    }
    let rows = biz.count().await;
    assert_eq!(rows, KEYS as i64, "one business row per key");
    assert_eq!(biz.duplicates().await, 0);
    // Every key holds a finished record, each produced by exactly one body.
    let BizPool::Pg(pool) = &biz.pool else {
        unreachable!()
    };
    let (done, executed): (i64, i64) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT (SELECT COUNT(*) FROM {s}.idem_records WHERE state = 1), \
                (SELECT COALESCE(SUM(runs), 0)::INT8 FROM {s}.worker_runs)",
        s = fx.names.schema_name().unwrap()
    )))
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(done, KEYS as i64);
    assert_eq!(
        executed, KEYS as i64,
        "bodies executed across all processes"
    );
}

/// The worker's `main` (see the module docs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_process_entry() {
    let Ok(worker) = std::env::var("IDEM_SQL_WORKER") else {
        return;
    };
    let schema = std::env::var("IDEM_SQL_SCHEMA").unwrap();
    let biz_spec = std::env::var("IDEM_SQL_BIZ").unwrap();
    let (table, index) = biz_spec.split_once(':').unwrap();
    // Small pools: four of these processes share PostgreSQL's 100 connections
    // with the rest of the suite (and other suites).
    let store_pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(Duration::from_secs(10))
        .test_before_acquire(false)
        .connect(&pg_url())
        .await
        .unwrap();
    let store =
        SqlStore::postgres(store_pool).with_tables(TableNames::default().schema(&schema).unwrap());
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(Duration::from_secs(10))
        .test_before_acquire(false)
        .connect(&pg_url())
        .await
        .unwrap();
    let biz = Biz {
        pool: BizPool::Pg(pool.clone()),
        table: table.to_owned(),
        index: index.to_owned(),
    };
    let idem = Idem::builder()
        .store(store)
        .namespace("procs")
        .op_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let runs = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sem = Arc::new(tokio::sync::Semaphore::new(32));
    let mut tasks = tokio::task::JoinSet::new();
    // Each worker walks the keys from a different offset, so they collide everywhere.
    let start = worker.parse::<usize>().unwrap() * KEYS / PROCS;
    for i in 0..KEYS {
        let k = (start + i) % KEYS;
        let (idem, biz, runs, sem) = (idem.clone(), biz.clone(), runs.clone(), sem.clone());
        tasks.spawn(async move {
            let _permit = sem.acquire().await.unwrap();
            let order_no = format!("o-{k}");
            let (b1, b2, no2) = (biz.clone(), biz.clone(), order_no.clone());
            let g = idem
                .guard("order", &[&order_no])
                .backstop(biz.index.clone());
            g.run_with(
                Hooks::new()
                    .detect(|e: &anyhow::Error| Some(e.as_ref()))
                    .on_conflict(move || async move { Ok(b2.find(&no2).await?) }),
                || async move {
                    runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let id = b1.insert(&order_no).await?;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    Ok::<_, anyhow::Error>(id)
                },
            )
            .await
            .map(|o| o.how())
        });
    }
    let mut executed = 0;
    while let Some(r) = tasks.join_next().await {
        let how = r.unwrap().expect("guarded call");
        assert_ne!(
            how,
            How::Backstop,
            "the shared store must catch every duplicate"
        );
        if how == How::Executed {
            executed += 1;
        }
    }
    assert_eq!(executed, runs.load(std::sync::atomic::Ordering::SeqCst));
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {schema}.worker_runs VALUES ($1, $2)"
    )))
    .bind(worker.parse::<i32>().unwrap())
    .bind(executed as i64)
    .execute(&pool)
    .await
    .unwrap();
    println!("worker {worker}: executed {executed} of {KEYS}");
}
