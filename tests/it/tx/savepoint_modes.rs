//! A failing body under the transactional guard, with and without the
//! savepoint, on each database: the body fails with its own error or with a
//! failed SQL statement, then the caller goes on and commits, or rolls back.
//!
//! With the savepoint: the caller's transaction is usable, the claim and the
//! body's rows are gone, the caller's rows stay. Without it: the guard deletes
//! its claim if the transaction still takes statements; the body's rows are
//! the caller's to roll back (on PostgreSQL a failed statement leaves the
//! transaction aborted: the caller's next statement fails). Either way no
//! record is left and a retry runs the body exactly once.

use std::sync::atomic::{AtomicUsize, Ordering};

use idem::{How, Idem};

use crate::support::{AppError, unique_ns};
use crate::tx::support::{Fail, TestDb, V, savepoint_cases};

const TABLES: [&str; 1] =
    ["CREATE TABLE t_sp (id VARCHAR(64) NOT NULL PRIMARY KEY, n BIGINT NOT NULL)"];

async fn call<D: TestDb>(
    idem: &Idem,
    tx: &mut sqlx::Transaction<'static, D::DB>,
    savepoint: bool,
    fail: Fail,
    runs: &AtomicUsize,
) -> Result<How, AppError> {
    let out = idem
        .guard("sp", &[&"k"])
        .in_tx(tx)
        .savepoint(savepoint)
        .run(|tx, _fence| {
            Box::pin(async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let insert = "INSERT INTO t_sp (id, n) VALUES (?, ?)";
                D::exec(tx.transaction(), insert, &[V::S("body".into()), V::I(1)]).await?;
                match fail {
                    Fail::No => Ok(1_i64),
                    Fail::Rust => Err(AppError::Business("the body fails".into())),
                    Fail::Sql => {
                        let again = [V::S("caller".into()), V::I(2)];
                        // Refused: a duplicate key (were it taken, the
                        // call would succeed and the test fail).
                        D::exec(tx.transaction(), insert, &again).await?;
                        Ok(0)
                    }
                }
            })
        })
        .await?;
    Ok(out.how())
}

async fn case<D: TestDb>(savepoint: bool, fail: Fail, commit: bool) {
    let what = format!("{} savepoint={savepoint} {fail:?} commit={commit}", D::NAME);
    let (db, _place) = D::fixture(&TABLES, 2).await;
    let idem = Idem::builder()
        .store(db.store())
        .namespace(unique_ns("txsp"))
        .build()
        .unwrap();
    let runs = AtomicUsize::new(0);
    let mut tx = db.begin().await;
    let caller = [V::S("caller".into()), V::I(1)];
    D::exec(&mut tx, "INSERT INTO t_sp (id, n) VALUES (?, ?)", &caller)
        .await
        .unwrap();
    let r = call::<D>(&idem, &mut tx, savepoint, fail, &runs).await;
    match fail {
        Fail::Rust => assert!(matches!(r, Err(AppError::Business(_))), "{what}: {r:?}"),
        _ => assert!(matches!(r, Err(AppError::Db(_))), "{what}: {r:?}"),
    }
    // The transaction is aborted only without a savepoint, after a failed
    // statement, on PostgreSQL.
    let aborted = !savepoint && matches!(fail, Fail::Sql) && D::NAME == "postgres";
    let mut committed = false;
    if commit {
        let after = [V::S("after".into()), V::I(1)];
        let next = D::exec(&mut tx, "INSERT INTO t_sp (id, n) VALUES (?, ?)", &after).await;
        assert_eq!(next.is_err(), aborted, "{what}: {next:?}");
        committed = next.is_ok();
    }
    match committed {
        true => tx.commit().await.unwrap(),
        false => tx.rollback().await.unwrap(),
    }
    let (caller, body) = (V::S("caller".into()), V::S("body".into()));
    let count = "SELECT COUNT(*) FROM t_sp WHERE id = ?";
    assert_eq!(
        db.int("SELECT COUNT(*) FROM idem_records", &[]).await,
        0,
        "{what}: no record, committed or not"
    );
    assert_eq!(
        db.int(count, std::slice::from_ref(&caller)).await,
        i64::from(committed),
        "{what}: caller's row"
    );
    // Only without the savepoint do the body's rows stay in a transaction the
    // caller then commits (after a body error it must roll back instead).
    let body_kept = committed && !savepoint;
    assert_eq!(
        db.int(count, std::slice::from_ref(&body)).await,
        i64::from(body_kept),
        "{what}: body's row"
    );
    if body_kept {
        let mut tx = db.begin().await;
        D::exec(
            &mut tx,
            "DELETE FROM t_sp WHERE id = ?",
            &[V::S("body".into())],
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }

    // The retry runs the body once; its duplicate replays.
    runs.store(0, Ordering::SeqCst);
    for expected in [How::Executed, How::Replayed] {
        let mut tx = db.begin().await;
        let how = call::<D>(&idem, &mut tx, savepoint, Fail::No, &runs).await;
        assert_eq!(how.unwrap(), expected, "{what}");
        tx.commit().await.unwrap();
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "{what}: the retry ran once");
    assert_eq!(db.int("SELECT COUNT(*) FROM idem_records", &[]).await, 1);
}

async fn every_case<D: TestDb>() {
    for (savepoint, fail, commit) in savepoint_cases() {
        case::<D>(savepoint, fail, commit).await;
    }
}

#[tokio::test]
async fn failing_body_with_and_without_savepoint_postgres() {
    every_case::<sqlx::PgPool>().await;
}

#[tokio::test]
async fn failing_body_with_and_without_savepoint_mariadb() {
    every_case::<sqlx::MySqlPool>().await;
}

#[tokio::test]
async fn failing_body_with_and_without_savepoint_sqlite() {
    every_case::<sqlx::SqlitePool>().await;
}
