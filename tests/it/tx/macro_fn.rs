//! `#[idempotent(tx = tx)]`: the macro form of the transactional guard, on
//! each database's concrete transaction type.

use std::sync::Arc;

use idem::Idem;

use crate::support::{AppError, Counter};
use crate::tx::support::{TestDb, V, is_tx_conflict};

const TABLES: [&str; 1] =
    ["CREATE TABLE t_buy (req_id VARCHAR(64) NOT NULL PRIMARY KEY, amount BIGINT NOT NULL)"];

macro_rules! buy_fn {
    ($name:ident, $db:ty, $insert:literal) => {
        #[idem::idempotent(key = "macro-buy:<req>", tx = tx, handle = idem, fingerprint = [amount])]
        async fn $name(
            idem: &Idem,
            runs: &Counter,
            tx: &mut sqlx::Transaction<'_, $db>,
            req: &str,
            amount: i64,
            fence: idem::Fence,
        ) -> Result<u64, AppError> {
            runs.hit();
            tokio::time::sleep(std::time::Duration::from_millis(30)).await;
            sqlx::query($insert)
                .bind(req)
                .bind(amount)
                .execute(&mut **tx)
                .await?;
            Ok(fence.get())
        }
    };
}

buy_fn!(
    buy_pg,
    sqlx::Postgres,
    "INSERT INTO t_buy (req_id, amount) VALUES ($1, $2)"
);
buy_fn!(
    buy_my,
    sqlx::MySql,
    "INSERT INTO t_buy (req_id, amount) VALUES (?, ?)"
);
buy_fn!(
    buy_lite,
    sqlx::Sqlite,
    "INSERT INTO t_buy (req_id, amount) VALUES (?, ?)"
);

macro_rules! macro_test {
    ($test:ident, $pool:ty, $f:ident) => {
        /// 20 concurrent calls (spawned: the future is `Send`) → one body, one
        /// row, one record, every caller the first call's fence; then a
        /// different amount for the same key is a payload mismatch.
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            let (db, _place) = <$pool as TestDb>::fixture(&TABLES, 8).await;
            let idem = Arc::new(
                Idem::builder()
                    .store(db.store())
                    .namespace(crate::support::unique_ns("txm"))
                    .build()
                    .unwrap(),
            );
            let runs = Counter::default();
            let barrier = Arc::new(tokio::sync::Barrier::new(20));
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..20 {
                let (db, idem, runs, barrier) = (
                    db.clone(),
                    Arc::clone(&idem),
                    runs.clone(),
                    Arc::clone(&barrier),
                );
                tasks.spawn(async move {
                    barrier.wait().await;
                    loop {
                        let mut tx = TestDb::begin(&db).await;
                        match $f(&idem, &runs, &mut tx, "m-1", 5, idem::Fence::default()).await {
                            Ok(fence) => {
                                if tx.commit().await.is_ok() {
                                    return fence;
                                }
                            }
                            Err(e) if is_tx_conflict(&e) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                });
            }
            let fences = tasks.join_all().await;
            assert_eq!(runs.get(), 1, "{}", <$pool as TestDb>::NAME);
            assert!(
                fences.iter().all(|f| *f == fences[0] && *f > 0),
                "{fences:?}"
            );
            let rows = db.int("SELECT COUNT(*) FROM t_buy", &[]).await;
            let records = db.int("SELECT COUNT(*) FROM idem_records", &[]).await;
            assert_eq!((rows, records), (1, 1));
            let mut tx = TestDb::begin(&db).await;
            let other = $f(&idem, &runs, &mut tx, "m-1", 6, idem::Fence::default()).await;
            assert!(
                matches!(
                    other,
                    Err(AppError::Idem(idem::Error::PayloadMismatch { .. }))
                ),
                "{other:?}"
            );
            drop(tx);
            let _ = V::I(0);
            eprintln!(
                "tx macro {}: 20 concurrent calls -> bodies {}, rows {rows}, records {records}",
                <$pool as TestDb>::NAME,
                runs.get()
            );
        }
    };
}

macro_test!(macro_tx_postgres, sqlx::PgPool, buy_pg);
macro_test!(macro_tx_mariadb, sqlx::MySqlPool, buy_my);
macro_test!(macro_tx_sqlite, sqlx::SqlitePool, buy_lite);

/// `savepoint = false`: the call sends no savepoint; a failing body deletes
/// the claim, the caller rolls back, and the retry runs once.
#[idem::idempotent(key = "macro-bare:<req>", tx = tx, handle = idem, savepoint = false)]
async fn bare_pg(
    idem: &Idem,
    runs: &Counter,
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    req: &str,
    fail: bool,
) -> Result<u64, AppError> {
    runs.hit();
    sqlx::query("INSERT INTO t_buy (req_id, amount) VALUES ($1, 1)")
        .bind(req)
        .execute(&mut **tx)
        .await?;
    match fail {
        true => Err(AppError::Business("the body fails".into())),
        false => Ok(1),
    }
}

#[tokio::test]
async fn macro_tx_without_savepoint_postgres() {
    let (db, _place) = <sqlx::PgPool as TestDb>::fixture(&TABLES, 2).await;
    let idem = Idem::builder()
        .store(db.store())
        .namespace(crate::support::unique_ns("txb"))
        .build()
        .unwrap();
    let runs = Counter::default();
    let (log, _guard) = crate::support::sql_log::SqlLog::start();
    let mut tx = TestDb::begin(&db).await;
    let _ = log.take();
    let r = bare_pg(&idem, &runs, &mut tx, "b-1", true).await;
    assert!(matches!(r, Err(AppError::Business(_))), "{r:?}");
    assert_eq!(log.take(), ["WITH", "INSERT", "DELETE"]);
    tx.rollback().await.unwrap();
    let mut tx = TestDb::begin(&db).await;
    let _ = log.take();
    assert_eq!(
        bare_pg(&idem, &runs, &mut tx, "b-1", false).await.unwrap(),
        1
    );
    assert_eq!(log.take(), ["WITH", "INSERT", "UPDATE"]);
    tx.commit().await.unwrap();
    let mut tx = TestDb::begin(&db).await;
    assert_eq!(
        bare_pg(&idem, &runs, &mut tx, "b-1", true).await.unwrap(),
        1
    );
    tx.commit().await.unwrap();
    assert_eq!(
        runs.get(),
        2,
        "the failed call and its retry; the repeat replays"
    );
    let rows = db.int("SELECT COUNT(*) FROM t_buy", &[]).await;
    let records = db.int("SELECT COUNT(*) FROM idem_records", &[]).await;
    assert_eq!((rows, records), (1, 1));
}
