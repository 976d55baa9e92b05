//! Insert-once under concurrency (issue 24, item j): 50 concurrent
//! duplicates of one key get one new row and 49 existing ones, without errors
//! or stalls, on every database.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem::db::insert_once::{InsertOnce, Inserted};

use crate::tx::support::{TestDb, V};

const TABLES: [&str; 2] = [
    "CREATE TABLE t_once (id VARCHAR(64) NOT NULL, k VARCHAR(64) NOT NULL)",
    "CREATE UNIQUE INDEX uk_once_k ON t_once (k)",
];

/// 50 concurrent inserts of one key, each in its own transaction, on a pool
/// of 8, with the handle's constraint catalog on the same pool and no
/// `verify()` beforehand (nothing cached): 1 new row, 49 existing ones that
/// see it, no error, no stall. On SQLite the violation names columns only,
/// and the old lookup of the index waited for a second pooled connection
/// while the caller's transaction held the write lock.
async fn fifty_inserts<D: TestDb>() {
    let (db, _place) = D::fixture(&TABLES, 8).await;
    let catalog = match D::NAME {
        "postgres" => idem::sql::SqlConstraints::postgres(pg_pool(&db)),
        "mariadb" => idem::sql::SqlConstraints::mysql(my_pool(&db)),
        _ => idem::sql::SqlConstraints::sqlite(lite_pool(&db)),
    };
    let idem = Arc::new(
        idem::Idem::builder()
            .store(idem::MemoryStore::new())
            .namespace(crate::support::unique_ns("once"))
            .constraints(catalog)
            .build()
            .unwrap(),
    );
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..50 {
        let (db, idem, barrier) = (db.clone(), Arc::clone(&idem), Arc::clone(&barrier));
        tasks.spawn(async move {
            barrier.wait().await;
            let mut tx = db.begin().await;
            let r = InsertOnce::new("uk_once_k")
                .handle(&idem)
                .run(
                    &mut tx,
                    "once-1",
                    |tx| {
                        Box::pin(async move {
                            let args = [V::S(format!("id-{i}"))];
                            D::exec(
                                tx.transaction(),
                                "INSERT INTO t_once (id, k) VALUES (?, 'once-1')",
                                &args,
                            )
                            .await?;
                            Ok(1_i64)
                        })
                    },
                    |tx| {
                        Box::pin(async move {
                            // The conflicting row, seen from this transaction.
                            count_in::<D>(
                                tx.transaction(),
                                "SELECT COUNT(*) FROM t_once WHERE k = 'once-1'",
                            )
                            .await
                        })
                    },
                )
                .await;
            match r {
                Ok(v) => tx.commit().await.map(|()| v).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            }
        });
    }
    let results = tasks.join_all().await;
    let elapsed = started.elapsed();
    let new = results
        .iter()
        .filter(|r| matches!(r, Ok(Inserted::New(1))))
        .count();
    let existing = results
        .iter()
        .filter(|r| matches!(r, Ok(Inserted::Existing(1))))
        .count();
    let errors: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    let rows = db.int("SELECT COUNT(*) FROM t_once", &[]).await;
    eprintln!(
        "insert_once {}: 50 concurrent inserts of one key, pool 8 -> new {new}, existing {existing}, errors {} {:?}, rows {rows}, {elapsed:?}",
        D::NAME,
        errors.len(),
        errors.first()
    );
    assert!(errors.is_empty(), "{}: {errors:?}", D::NAME);
    assert_eq!((new, existing, rows), (1, 49, 1), "{}", D::NAME);
    // The callers queue for one key's lock, milliseconds each: the old stall
    // was a 10 s pool timeout per caller.
    assert!(
        elapsed < Duration::from_secs(30),
        "{}: {elapsed:?}",
        D::NAME
    );
}
crate::support::sql::per_database!(generic: insert_once_fifty_concurrent_duplicates_one_new_row,
    fifty_inserts
);

fn pg_pool<D: TestDb>(db: &D) -> sqlx::PgPool {
    (db as &dyn std::any::Any)
        .downcast_ref::<sqlx::PgPool>()
        .expect("postgres pool")
        .clone()
}

fn my_pool<D: TestDb>(db: &D) -> sqlx::MySqlPool {
    (db as &dyn std::any::Any)
        .downcast_ref::<sqlx::MySqlPool>()
        .expect("mariadb pool")
        .clone()
}

fn lite_pool<D: TestDb>(db: &D) -> sqlx::SqlitePool {
    (db as &dyn std::any::Any)
        .downcast_ref::<sqlx::SqlitePool>()
        .expect("sqlite pool")
        .clone()
}

/// The first column of the first row of `sql`, read in `tx`.
async fn count_in<D: TestDb>(
    tx: &mut sqlx::Transaction<'static, D::DB>,
    sql: &str,
) -> Result<i64, sqlx::Error> {
    let tx = tx as &mut dyn std::any::Any;
    if let Some(tx) = tx.downcast_mut::<sqlx::Transaction<'static, sqlx::Postgres>>() {
        let sql = crate::tx::support::pg_sql(sql);
        return sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(&mut **tx)
            .await;
    }
    if let Some(tx) = tx.downcast_mut::<sqlx::Transaction<'static, sqlx::MySql>>() {
        return sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
            .fetch_one(&mut **tx)
            .await;
    }
    let tx = tx
        .downcast_mut::<sqlx::Transaction<'static, sqlx::Sqlite>>()
        .expect("one of the three databases");
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(&mut **tx)
        .await
}
