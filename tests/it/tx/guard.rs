//! The transactional guard (`Guard::in_tx`) on PostgreSQL, MariaDB and SQLite:
//! the record and the business rows commit or roll back together.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idem::{How, Idem, MemoryStore};

use crate::support::{AppError, Counter, unique_ns};
use crate::tx::support::{TestDb, V, is_tx_conflict};

const TABLES: [&str; 1] =
    ["CREATE TABLE t_buy (req_id VARCHAR(64) NOT NULL PRIMARY KEY, amount BIGINT NOT NULL)"];

fn handle(store: impl idem::Store) -> Idem {
    Idem::builder()
        .store(store)
        .namespace(unique_ns("tx"))
        .op_timeout(crate::support::TEST_OP_TIMEOUT)
        .build()
        .unwrap()
}

/// One guarded purchase in its own transaction, committed; retried whole when
/// the database says it lost to a concurrent transaction. Returns how the
/// value was obtained and the number of retries.
async fn buy<D: TestDb>(db: &D, idem: &Idem, req: &str, runs: &Counter) -> (How, usize) {
    let mut retries = 0;
    loop {
        let mut tx = db.begin().await;
        let r = idem
            .guard("buy", &[&req])
            .in_tx(&mut tx)
            .run(|tx, _fence| {
                Box::pin(async move {
                    runs.hit();
                    tokio::time::sleep(Duration::from_millis(40)).await;
                    let args = [V::S(req.to_owned()), V::I(7)];
                    D::exec(
                        tx.transaction(),
                        "INSERT INTO t_buy (req_id, amount) VALUES (?, ?)",
                        &args,
                    )
                    .await?;
                    Ok::<_, AppError>(7_i64)
                })
            })
            .await;
        match r {
            Ok(out) => match tx.commit().await {
                Ok(()) => {
                    assert_eq!(*out.value(), 7);
                    return (out.how(), retries);
                }
                Err(e) if idem::db::is_retryable_conflict(&e) => retries += 1,
                Err(e) => panic!("{}: commit failed: {e}", D::NAME),
            },
            Err(e) if is_tx_conflict(&e) => {
                let _ = tx.rollback().await;
                retries += 1;
            }
            Err(e) => panic!("{}: {e}", D::NAME),
        }
        assert!(retries < 50, "{}: too many retries", D::NAME);
    }
}

async fn records<D: TestDb>(db: &D) -> i64 {
    db.int("SELECT COUNT(*) FROM idem_records", &[]).await
}

async fn buys<D: TestDb>(db: &D, req: &str) -> i64 {
    db.int(
        "SELECT COUNT(*) FROM t_buy WHERE req_id = ?",
        &[V::S(req.into())],
    )
    .await
}

/// 50 concurrent duplicates, all started behind a barrier: one body, one
/// business row, one record; the rest replay the committed value.
async fn concurrent_duplicates<D: TestDb>() {
    let (db, _place) = D::fixture(&TABLES, 12).await;
    let idem = Arc::new(handle(db.store()));
    let runs = Counter::default();
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let retries = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..50 {
        let (db, idem, runs, barrier, retries) = (
            db.clone(),
            Arc::clone(&idem),
            runs.clone(),
            Arc::clone(&barrier),
            Arc::clone(&retries),
        );
        tasks.spawn(async move {
            barrier.wait().await;
            let (how, r) = buy(&db, &idem, "r-1", &runs).await;
            retries.fetch_add(r, Ordering::SeqCst);
            how
        });
    }
    let hows = tasks.join_all().await;
    let executed = hows.iter().filter(|h| **h == How::Executed).count();
    let waited = hows.iter().filter(|h| **h == How::Waited).count();
    let replayed = hows.iter().filter(|h| **h == How::Replayed).count();
    eprintln!(
        "tx_guard {}: 50 duplicates -> executed {executed}, waited {waited}, replayed {replayed}, \
         bodies {}, business rows {}, records {}, whole-transaction retries {}",
        D::NAME,
        runs.get(),
        buys(&db, "r-1").await,
        records(&db).await,
        retries.load(Ordering::SeqCst)
    );
    assert_eq!(runs.get(), 1, "{}: one body", D::NAME);
    assert_eq!(executed, 1);
    assert_eq!(waited + replayed, 49);
    assert_eq!(buys(&db, "r-1").await, 1);
    assert_eq!(records(&db).await, 1);
    // Counted by the shared observe layer (technique `tx_guard`), top-K included.
    let stats = idem.stats();
    assert_eq!(stats.count("executed"), 1);
    assert_eq!(stats.count("replayed") + stats.count("waited"), 49);
    assert_eq!(
        stats.top_keys.first().map(|k| k.count),
        Some(49),
        "{stats:?}"
    );
}
crate::support::sql::per_database!(generic: concurrent_duplicates_one_row_one_record,
    concurrent_duplicates
);

/// A transaction rolled back after the body (a crash before commit) leaves
/// neither the business row nor the record, and the retry runs the body.
async fn rollback_leaves_nothing<D: TestDb>() {
    let (db, _place) = D::fixture(&TABLES, 4).await;
    let idem = handle(db.store());
    let runs = Counter::default();
    let mut tx = db.begin().await;
    let counted = &runs;
    let out = idem
        .guard("buy", &[&"r-2"])
        .in_tx(&mut tx)
        .run(|tx, _fence| {
            Box::pin(async move {
                counted.hit();
                let args = [V::S("r-2".into()), V::I(7)];
                D::exec(
                    tx.transaction(),
                    "INSERT INTO t_buy (req_id, amount) VALUES (?, ?)",
                    &args,
                )
                .await?;
                Ok::<_, AppError>(1_i64)
            })
        })
        .await
        .unwrap();
    assert_eq!(out.how(), How::Executed);
    tx.rollback().await.unwrap();
    assert_eq!(buys(&db, "r-2").await, 0, "{}", D::NAME);
    assert_eq!(records(&db).await, 0, "{}", D::NAME);
    let (how, _) = buy(&db, &idem, "r-2", &runs).await;
    assert_eq!(how, How::Executed, "{}: the retry runs", D::NAME);
    assert_eq!(runs.get(), 2);
    assert_eq!(buys(&db, "r-2").await, 1);
    assert_eq!(records(&db).await, 1);
    eprintln!(
        "tx_guard {}: rollback -> rows 0, records 0; retry executed -> rows 1, records 1",
        D::NAME
    );
}
crate::support::sql::per_database!(generic: rolled_back_transaction_leaves_nothing,
    rollback_leaves_nothing
);

/// With a memory store in front: a committed record is replayed from the
/// table after the front store lost the key, and copied back into the front.
async fn front_store_lost_key<D: TestDb>() {
    let (db, _place) = D::fixture(&TABLES, 4).await;
    let idem = handle(MemoryStore::new());
    let runs = Counter::default();
    let (how, _) = buy(&db, &idem, "r-3", &runs).await;
    assert_eq!(how, How::Executed);
    let key = idem.key("buy", &[&"r-3"]);
    assert!(
        idem.inspect(&key).await.unwrap().is_none(),
        "{}: the front store is not written before the commit",
        D::NAME
    );
    let (how, _) = buy(&db, &idem, "r-3", &runs).await;
    assert_eq!(how, How::Replayed);
    assert!(
        idem.inspect(&key).await.unwrap().is_some(),
        "{}: a replay copies the committed record to the front",
        D::NAME
    );
    assert!(
        idem.forget(&key).await.unwrap(),
        "the front store loses the key"
    );
    let (how, _) = buy(&db, &idem, "r-3", &runs).await;
    assert_eq!(how, How::Replayed, "{}: replayed from the table", D::NAME);
    assert_eq!(runs.get(), 1);
    assert_eq!(buys(&db, "r-3").await, 1);
    assert_eq!(records(&db).await, 1);
}
crate::support::sql::per_database!(generic: committed_record_replayed_after_front_store_lost_it,
    front_store_lost_key
);

/// A guarded call on a concrete database can be spawned: its future is `Send`
/// (what `#[idempotent(tx = …)]` handlers in a multi-threaded server need).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concrete_call_is_send_and_spawns() {
    let (db, _place) = <sqlx::PgPool as TestDb>::fixture(&TABLES, 4).await;
    let idem = Arc::new(handle(db.store()));
    let task = tokio::spawn(async move {
        let mut tx = db.begin().await.unwrap();
        let req = String::from("r-send");
        let out = idem
            .guard("buy", &[&req])
            .in_tx(&mut tx)
            .run(|tx, _fence| {
                Box::pin(async move {
                    sqlx::query("INSERT INTO t_buy (req_id, amount) VALUES ($1, 1)")
                        .bind(&req)
                        .execute(&mut **tx)
                        .await?;
                    Ok::<_, AppError>(req.len())
                })
            })
            .await
            .unwrap();
        tx.commit().await.unwrap();
        out.how()
    });
    assert_eq!(task.await.unwrap(), How::Executed);
}

/// PostgreSQL under `REPEATABLE READ`: a concurrent duplicate waits on the
/// key, then its transaction is aborted (40001) as `Error::TxConflict`
/// instead of replaying in place; the retried transaction replays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_repeatable_read_duplicate_aborts_then_replays() {
    let (db, _place) = <sqlx::PgPool as TestDb>::fixture(&TABLES, 4).await;
    let idem = Arc::new(handle(db.store()));
    let runs = Counter::default();
    let rr = "BEGIN ISOLATION LEVEL REPEATABLE READ";
    let mut first = db.begin_with(rr).await.unwrap();
    let out = idem
        .guard("buy", &[&"r-rr"])
        .in_tx(&mut first)
        .run(|_tx, _fence| {
            runs.hit();
            Box::pin(async { Ok::<_, AppError>(7_i64) })
        })
        .await
        .unwrap();
    assert_eq!(out.how(), How::Executed);
    let second = {
        let (db, idem, runs) = (db.clone(), Arc::clone(&idem), runs.clone());
        tokio::spawn(async move {
            let mut tx = db.begin_with(rr).await.unwrap();
            // Take the snapshot before the first transaction commits.
            sqlx::query("SELECT 1").execute(&mut *tx).await.unwrap();
            idem.guard("buy", &[&"r-rr"])
                .in_tx(&mut tx)
                .run(|_tx, _fence| {
                    runs.hit();
                    Box::pin(async { Ok::<_, AppError>(2_i64) })
                })
                .await
                .map(|o| o.how())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    first.commit().await.unwrap();
    let r = second.await.unwrap();
    assert!(
        matches!(r, Err(AppError::Idem(idem::Error::TxConflict { .. }))),
        "{r:?}"
    );
    let (how, _) = buy(&db, &idem, "r-rr", &runs).await;
    assert_eq!(how, How::Replayed);
    assert_eq!(runs.get(), 1);
    eprintln!(
        "tx_guard postgres REPEATABLE READ: duplicate -> TxConflict (40001), retry -> replayed"
    );
}

/// SQLite: a deferred transaction that read before another connection wrote
/// cannot upgrade to a writer; the guard reports it as `Error::TxConflict`
/// naming `BEGIN IMMEDIATE`, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_deferred_transaction_is_a_typed_conflict() {
    let (db, _place) = <sqlx::SqlitePool as TestDb>::fixture(&TABLES, 4).await;
    let idem = handle(db.store());
    let mut deferred = sqlx::Pool::begin(&db).await.unwrap();
    sqlx::query("SELECT COUNT(*) FROM t_buy")
        .execute(&mut *deferred)
        .await
        .unwrap();
    let mut other = TestDb::begin(&db).await;
    let args = [V::S("w".into()), V::I(1)];
    <sqlx::SqlitePool as TestDb>::exec(
        &mut other,
        "INSERT INTO t_buy (req_id, amount) VALUES (?, ?)",
        &args,
    )
    .await
    .unwrap();
    other.commit().await.unwrap();
    let r = idem
        .guard("buy", &[&"r-deferred"])
        .in_tx(&mut deferred)
        .run(|_tx, _fence| Box::pin(async { Ok::<_, AppError>(1_i64) }))
        .await;
    match r {
        Err(AppError::Idem(idem::Error::TxConflict { detail, .. })) => {
            assert!(detail.contains("BEGIN IMMEDIATE"), "{detail}")
        }
        other => panic!("{other:?}"),
    }
    drop(deferred);
    assert_eq!(records(&db).await, 0);
}
