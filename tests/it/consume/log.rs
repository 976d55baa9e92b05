//! The consume log on PostgreSQL, MariaDB and SQLite, through the non-macro
//! API: each unique key stops its own kind of duplicate, a body error leaves
//! neither row, a concurrent redelivery waits for the first attempt, and
//! `purge_expired`/`verify` cover the table.

use std::sync::Arc;
use std::time::Duration;

use idem::consume::{LogTable, Message, consume_once};
use idem::db::Dialect;
use idem::{Consumed, DuplicateOf};

use crate::consume::support::{LogDb, Pool};
use crate::support::sql::per_database;
use crate::support::{AppError, handle};

/// A transaction on `DB` the tests' bodies can write to.
trait Db: idem::db::SqlDb
where
    for<'c> &'c mut Self::Connection: sqlx::Executor<'c, Database = Self>,
{
}
impl<DB: idem::db::SqlDb> Db for DB where
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>
{
}

/// Consumes one refund message in a fresh transaction on `pool` and commits:
/// the body inserts the refund row (and fails after it when `fail`).
async fn consume<DB: Db>(
    pool: &sqlx::Pool<DB>,
    idem: &idem::Idem,
    msg_id: &str,
    kind: &str,
    order_no: &str,
    fail: bool,
    delay: Duration,
) -> Result<Consumed<()>, AppError>
where
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
{
    let mut tx = pool.begin().await?;
    let msg = Message {
        consumer: "refunds",
        id: &msg_id,
        business: Some((kind, &order_no)),
    };
    let insert = format!("INSERT INTO refunds VALUES ('{order_no}', '{msg_id}', '{kind}')");
    let out = consume_once(&mut tx, msg)
        .handle(idem)
        .run(async |tx: &mut sqlx::Transaction<'_, DB>| {
            sqlx::raw_sql(sqlx::AssertSqlSafe(insert))
                .execute(&mut **tx)
                .await?;
            tokio::time::sleep(delay).await;
            if fail {
                return Err(AppError::Business("refund rejected".into()));
            }
            Ok(())
        })
        .await;
    match out {
        Ok(v) => {
            tx.commit().await?;
            Ok(v)
        }
        Err(e) => Err(e),
    }
}

macro_rules! on_pool {
    ($db:expr, |$p:ident| $body:expr) => {
        match &$db.pool {
            Pool::Pg($p) => $body,
            Pool::My($p) => $body,
            Pool::Lite($p) => $body,
        }
    };
}

async fn each_key_stops_its_duplicate(dialect: Dialect) {
    let db = LogDb::new(dialect).await;
    let idem = handle(Arc::new(db.store.clone()), "consume");
    let z = Duration::ZERO;
    let run = |id: &'static str, kind: &'static str, order: &'static str| {
        let (db, idem) = (&db, &idem);
        async move { on_pool!(db, |p| consume(p, idem, id, kind, order, false, z).await) }
    };
    assert_eq!(
        run("m1", "refund", "o1").await.unwrap(),
        Consumed::Processed(())
    );
    // The same message again (a redelivery): both keys match, and which one
    // the database reports is its choice (SQLite names the business index).
    assert!(run("m1", "refund", "o1").await.unwrap().is_duplicate());
    // The message-id key alone: the same id about another order is still
    // that message.
    assert_eq!(
        run("m1", "refund", "o2").await.unwrap(),
        Consumed::Duplicate {
            by: DuplicateOf::MessageId
        }
    );
    // The business-id key alone: the same order re-published under a new id.
    assert_eq!(
        run("m2", "refund", "o1").await.unwrap(),
        Consumed::Duplicate {
            by: DuplicateOf::BusinessId
        }
    );
    // Another message type about the same order is not a duplicate.
    assert_eq!(
        run("m3", "notify", "o1").await.unwrap(),
        Consumed::Processed(())
    );
    assert_eq!(db.refunds().await, 2);
    assert_eq!(db.double_refunds().await, 0);
    assert_eq!(db.log_rows().await, 2);
    let stats = idem.stats();
    assert_eq!(stats.count("duplicate_message"), 3);
    assert_eq!(stats.count("executed"), 2);
    assert!((stats.interception_rate() - 0.6).abs() < 1e-9, "{stats:?}");
}

async fn body_error_leaves_neither_row(dialect: Dialect) {
    let db = LogDb::new(dialect).await;
    let idem = handle(Arc::new(db.store.clone()), "consume");
    let z = Duration::ZERO;
    let e = on_pool!(db, |p| consume(p, &idem, "m1", "refund", "o1", true, z)
        .await);
    assert!(matches!(e, Err(AppError::Business(_))), "{e:?}");
    assert_eq!(
        db.log_rows().await,
        0,
        "the log row rolled back with the body"
    );
    assert_eq!(db.refunds().await, 0, "the body's row rolled back");
    // The redelivery processes it.
    let ok = on_pool!(db, |p| consume(p, &idem, "m1", "refund", "o1", false, z)
        .await);
    assert_eq!(ok.unwrap(), Consumed::Processed(()));
    assert_eq!((db.log_rows().await, db.refunds().await), (1, 1));
    assert_eq!(idem.stats().count("released"), 1);
}

/// Two deliveries of one message at once (a redelivery while the first attempt
/// runs): the second waits on the log's key until the first commits, then is a
/// duplicate.
async fn concurrent_delivery_waits_for_the_first(dialect: Dialect) {
    let db = LogDb::new(dialect).await;
    let idem = handle(Arc::new(db.store.clone()), "consume");
    let barrier = tokio::sync::Barrier::new(2);
    // Joined in one task (the non-macro body is not `Send`): the two
    // transactions still interleave on their own connections.
    let one = || async {
        barrier.wait().await;
        let d = Duration::from_millis(400);
        on_pool!(db, |p| consume(p, &idem, "m1", "refund", "o1", false, d)
            .await)
    };
    let (a, b) = tokio::join!(one(), one());
    let outs = [a.unwrap(), b.unwrap()];
    assert_eq!(
        outs.iter().filter(|o| o.is_processed()).count(),
        1,
        "{outs:?}"
    );
    assert_eq!(
        outs.iter().filter(|o| o.is_duplicate()).count(),
        1,
        "{outs:?}"
    );
    assert_eq!(db.refunds().await, 1);
}

async fn purge_and_verify_cover_the_log(dialect: Dialect) {
    let db = LogDb::new(dialect).await;
    let idem = handle(Arc::new(db.store.clone()), "consume");
    idem.verify(&[])
        .await
        .expect("verify finds the consume log");
    let short = LogTable {
        retention: Duration::from_millis(1),
        ..LogTable::default()
    };
    on_pool!(db, |p| {
        let mut tx = p.begin().await.unwrap();
        let msg = Message {
            consumer: "refunds",
            id: &"old",
            business: None,
        };
        let out = consume_once(&mut tx, msg)
            .log(short)
            .run(async |_| Ok::<_, AppError>(()))
            .await
            .unwrap();
        assert!(out.is_processed());
        tx.commit().await.unwrap();
    });
    let z = Duration::ZERO;
    let kept = on_pool!(db, |p| consume(p, &idem, "kept", "refund", "o1", false, z)
        .await);
    assert!(kept.unwrap().is_processed());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(idem.purge_expired().await.unwrap() >= 1);
    assert_eq!(db.log_rows().await, 1, "only the expired row went");
}

per_database!(
    each_key_stops_its_duplicate,
    body_error_leaves_neither_row,
    concurrent_delivery_waits_for_the_first,
    purge_and_verify_cover_the_log,
);

/// A log table that was never created is a configuration error naming the
/// fix, not a database error to retry.
#[tokio::test]
async fn missing_log_table_names_the_fix() {
    let pool = sqlx::SqlitePool::connect("sqlite::memory:").await.unwrap();
    let mut tx = pool.begin().await.unwrap();
    let msg = Message {
        consumer: "c",
        id: &"m",
        business: None,
    };
    let e = consume_once(&mut tx, msg)
        .run(async |_| Ok::<_, AppError>(()))
        .await
        .unwrap_err();
    match e {
        AppError::Idem(idem::Error::Config(m)) => assert!(m.contains("migrate()"), "{m}"),
        other => panic!("{other:?}"),
    }
    let bad = LogTable {
        table: "order",
        ..LogTable::default()
    };
    let msg = Message {
        consumer: "c",
        id: &"m",
        business: None,
    };
    let e = consume_once(&mut tx, msg)
        .log(bad)
        .run(async |_| Ok::<_, AppError>(()))
        .await;
    assert!(
        matches!(e, Err(AppError::Idem(idem::Error::Config(_)))),
        "{e:?}"
    );
}
