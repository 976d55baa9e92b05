//! Consume-once with and without the savepoint, on each database.
//!
//! A failing body (its own error, or a failed SQL statement), then the caller
//! goes on and commits, or rolls back: with the savepoint the log row and the
//! body's rows go and the transaction is usable; without it the log row is
//! deleted if the transaction still takes statements, and the body's rows are
//! the caller's to roll back (on PostgreSQL a failed statement leaves the
//! transaction aborted). Either way the redelivery runs the body exactly once,
//! and later duplicates, by message id or business id, do not run it.
//!
//! The statements per message are pinned on PostgreSQL and MariaDB (from
//! sqlx's statement log; `BEGIN` and `COMMIT` are the caller's).

use std::sync::atomic::{AtomicUsize, Ordering};

use idem::consume::{Message, consume_once};
use idem::{Consumed, DuplicateOf};

use crate::support::AppError;
use crate::support::sql_log::SqlLog;
use crate::tx::support::{Fail, TestDb, V, savepoint_cases};

const TABLES: [&str; 1] =
    ["CREATE TABLE t_sp (id VARCHAR(64) NOT NULL PRIMARY KEY, n BIGINT NOT NULL)"];
const INSERT: &str = "INSERT INTO t_sp (id, n) VALUES (?, ?)";

/// Consumes message `id` about `order` in `tx`.
async fn consume<D: TestDb>(
    tx: &mut sqlx::Transaction<'static, D::DB>,
    id: &str,
    order: &str,
    savepoint: bool,
    fail: Fail,
    runs: &AtomicUsize,
) -> Result<Consumed<i64>, AppError> {
    let msg = Message {
        consumer: "sp",
        id: &id,
        business: Some(("refund", &order)),
    };
    consume_once(&mut *tx, msg)
        .savepoint(savepoint)
        .run(async |tx: &mut sqlx::Transaction<'static, D::DB>| {
            runs.fetch_add(1, Ordering::SeqCst);
            D::exec(tx, INSERT, &[V::S("body".into()), V::I(1)]).await?;
            match fail {
                Fail::No => Ok(1),
                Fail::Rust => Err(AppError::Business("the body fails".into())),
                Fail::Sql => {
                    // Refused: a duplicate key.
                    D::exec(tx, INSERT, &[V::S("caller".into()), V::I(2)]).await?;
                    Ok(0)
                }
            }
        })
        .await
}

async fn case<D: TestDb>(savepoint: bool, fail: Fail, commit: bool) {
    let what = format!("{} savepoint={savepoint} {fail:?} commit={commit}", D::NAME);
    let (db, _place) = D::fixture(&TABLES, 2).await;
    let runs = AtomicUsize::new(0);
    let mut tx = db.begin().await;
    D::exec(&mut tx, INSERT, &[V::S("caller".into()), V::I(1)])
        .await
        .unwrap();
    let r = consume::<D>(&mut tx, "m1", "o1", savepoint, fail, &runs).await;
    match fail {
        Fail::Rust => assert!(matches!(r, Err(AppError::Business(_))), "{what}: {r:?}"),
        _ => assert!(matches!(r, Err(AppError::Db(_))), "{what}: {r:?}"),
    }
    let aborted = !savepoint && matches!(fail, Fail::Sql) && D::NAME == "postgres";
    let mut committed = false;
    if commit {
        let next = D::exec(&mut tx, INSERT, &[V::S("after".into()), V::I(1)]).await;
        assert_eq!(next.is_err(), aborted, "{what}: {next:?}");
        committed = next.is_ok();
    }
    match committed {
        true => tx.commit().await.unwrap(),
        false => tx.rollback().await.unwrap(),
    }
    let count = "SELECT COUNT(*) FROM t_sp WHERE id = ?";
    assert_eq!(
        db.int("SELECT COUNT(*) FROM idem_consume_log", &[]).await,
        0,
        "{what}: no log row"
    );
    let caller = db.int(count, &[V::S("caller".into())]).await;
    assert_eq!(caller, i64::from(committed), "{what}: the caller's row");
    let body_kept = committed && !savepoint;
    let body = db.int(count, &[V::S("body".into())]).await;
    assert_eq!(body, i64::from(body_kept), "{what}: the body's row");
    let mut tx = db.begin().await;
    D::exec(
        &mut tx,
        "DELETE FROM t_sp WHERE id = ?",
        &[V::S("body".into())],
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();

    // The redelivery runs once; a duplicate by message id or by business id
    // does not run.
    runs.store(0, Ordering::SeqCst);
    let expected = [
        ("m1", Consumed::Processed(1)),
        (
            "m1",
            Consumed::Duplicate {
                by: DuplicateOf::MessageId,
            },
        ),
        (
            "m2",
            Consumed::Duplicate {
                by: DuplicateOf::BusinessId,
            },
        ),
    ];
    for (id, expected) in expected {
        let mut tx = db.begin().await;
        let out = consume::<D>(&mut tx, id, "o1", savepoint, Fail::No, &runs).await;
        assert_eq!(out.unwrap(), expected, "{what}: {id}");
        tx.commit().await.unwrap();
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "{what}: the redelivery ran once"
    );
    assert_eq!(
        db.int("SELECT COUNT(*) FROM idem_consume_log", &[]).await,
        1
    );
}

async fn every_case<D: TestDb>() {
    for (savepoint, fail, commit) in savepoint_cases() {
        case::<D>(savepoint, fail, commit).await;
    }
}

#[tokio::test]
async fn consume_with_and_without_savepoint_postgres() {
    every_case::<sqlx::PgPool>().await;
}

#[tokio::test]
async fn consume_with_and_without_savepoint_mariadb() {
    every_case::<sqlx::MySqlPool>().await;
}

#[tokio::test]
async fn consume_with_and_without_savepoint_sqlite() {
    every_case::<sqlx::SqlitePool>().await;
}

/// The statements of one message: processed, a duplicate (by message id),
/// and a failing body.
async fn statements<D: TestDb>(savepoint: bool, duplicate: &[&str], failed: &[&str]) {
    let (db, _place) = D::fixture(&TABLES, 2).await;
    let runs = AtomicUsize::new(0);
    let (log, _guard) = SqlLog::start();
    let mut seen = Vec::new();
    let steps = [
        ("m1", "o1", Fail::No),
        ("m1", "o1", Fail::No),
        ("m3", "o3", Fail::Rust),
    ];
    for (id, order, fail) in steps {
        let mut tx = db.begin().await;
        // Room for the body's row.
        D::exec(&mut tx, "DELETE FROM t_sp", &[]).await.unwrap();
        let _ = log.take();
        let r = consume::<D>(&mut tx, id, order, savepoint, fail, &runs).await;
        seen.push(log.take());
        assert_eq!(r.is_ok(), matches!(fail, Fail::No), "{r:?}");
        match fail {
            Fail::No => tx.commit().await.unwrap(),
            _ => tx.rollback().await.unwrap(),
        }
    }
    println!("consume {} savepoint={savepoint}: {seen:?}", D::NAME);
    let words = |w: &[&str]| {
        let first: &[&str] = if savepoint { &["SAVEPOINT"] } else { &[] };
        first
            .iter()
            .chain(w)
            .map(|s| (*s).to_owned())
            .collect::<Vec<_>>()
    };
    // The log row, then the body's.
    assert_eq!(seen[0], words(&["INSERT", "INSERT"]), "processed");
    assert_eq!(seen[1], words(duplicate), "duplicate");
    assert_eq!(seen[2], words(failed), "failed body");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn consume_statements_postgres() {
    let undo = ["INSERT", "INSERT", "ROLLBACK", "RELEASE"];
    statements::<sqlx::PgPool>(true, &["INSERT", "ROLLBACK", "RELEASE"], &undo).await;
}

#[tokio::test]
async fn consume_statements_without_savepoint_postgres() {
    // `ON CONFLICT DO NOTHING` inserts no row; the business id's check finds
    // the message id logged.
    let undo = ["INSERT", "INSERT", "DELETE"];
    statements::<sqlx::PgPool>(false, &["INSERT", "SELECT"], &undo).await;
}

#[tokio::test]
async fn consume_statements_mariadb() {
    let undo = ["INSERT", "INSERT", "ROLLBACK", "RELEASE"];
    statements::<sqlx::MySqlPool>(true, &["INSERT", "ROLLBACK", "RELEASE"], &undo).await;
}

#[tokio::test]
async fn consume_statements_without_savepoint_mariadb() {
    let undo = ["INSERT", "INSERT", "DELETE"];
    statements::<sqlx::MySqlPool>(false, &["INSERT"], &undo).await;
}
