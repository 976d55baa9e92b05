//! The statements the transactional guard sends inside the caller's
//! transaction, pinned per dialect (read from sqlx's statement log; `BEGIN`
//! and `COMMIT` are the caller's). The success path takes a savepoint and
//! leaves it to the transaction's end (no `RELEASE`); a failing body rolls
//! back to it, which keeps the guarantee: the caller's transaction is usable
//! and neither the claim nor the body's rows are left. The claim is one
//! statement on PostgreSQL (a CTE) and two on MariaDB (the fence slot's
//! `SELECT … FOR UPDATE`, then the upsert).
//!
//! Without the savepoint (`savepoint(false)`) a first call is the claim and
//! the complete (with the caller's `BEGIN` and `COMMIT`, four statements on
//! PostgreSQL); a failing body is followed by the claim's `DELETE`, and the
//! caller rolls back.

use idem::{How, Idem};

use crate::support::sql_log::SqlLog;
use crate::support::{AppError, unique_ns};
use crate::tx::support::{TestDb, V};

const TABLES: [&str; 1] =
    ["CREATE TABLE t_stmt (id VARCHAR(64) NOT NULL PRIMARY KEY, n BIGINT NOT NULL)"];

fn handle(store: idem::store::sql::SqlStore) -> Idem {
    // The SQL store itself: no front store, whose notes would add statements.
    Idem::builder()
        .store(store)
        .namespace(unique_ns("txs"))
        .build()
        .unwrap()
}

/// One guarded call in `tx`: the body writes one row, then fails or not.
async fn call<D: TestDb>(
    idem: &Idem,
    tx: &mut sqlx::Transaction<'static, D::DB>,
    id: &str,
    fail: bool,
    savepoint: bool,
) -> Result<How, AppError> {
    let out = idem
        .guard("stmt", &[&id])
        .in_tx(tx)
        .savepoint(savepoint)
        .run(|tx, _fence| {
            let id = id.to_owned();
            Box::pin(async move {
                let args = [V::S(id), V::I(1)];
                D::exec(
                    tx.transaction(),
                    "INSERT INTO t_stmt (id, n) VALUES (?, ?)",
                    &args,
                )
                .await?;
                if fail {
                    return Err(AppError::Business("the body fails".into()));
                }
                Ok::<_, AppError>(1_i64)
            })
        })
        .await?;
    Ok(out.how())
}

async fn statements_per_path<D: TestDb>(claim: &[&str], found: &[&str], savepoint: bool) {
    let (db, _place) = D::fixture(&TABLES, 2).await;
    let idem = handle(db.store());
    let (log, _guard) = SqlLog::start();

    // A failing body: the claim and the body's row go, the caller's row and
    // transaction stay.
    let mut tx = db.begin().await;
    D::exec(
        &mut tx,
        "INSERT INTO t_stmt (id, n) VALUES (?, ?)",
        &[V::S("caller".into()), V::I(1)],
    )
    .await
    .unwrap();
    let _ = log.take();
    let r = call::<D>(&idem, &mut tx, "a", true, savepoint).await;
    assert!(
        matches!(r, Err(AppError::Business(_))),
        "{}: {r:?}",
        D::NAME
    );
    let failed = log.take();
    if savepoint {
        D::exec(
            &mut tx,
            "INSERT INTO t_stmt (id, n) VALUES (?, ?)",
            &[V::S("after".into()), V::I(1)],
        )
        .await
        .expect("the caller's transaction is usable after a failing body");
        tx.commit().await.unwrap();
    } else {
        // Without the savepoint the body's row is still in the transaction.
        tx.rollback().await.unwrap();
    }
    assert_eq!(
        db.int("SELECT COUNT(*) FROM t_stmt", &[]).await,
        if savepoint { 2 } else { 0 },
        "{}: caller's rows only",
        D::NAME
    );
    assert_eq!(
        db.int("SELECT COUNT(*) FROM idem_records", &[]).await,
        0,
        "{}: no record left",
        D::NAME
    );

    // The first call, then its duplicate in a later transaction.
    let mut tx = db.begin().await;
    let _ = log.take();
    assert_eq!(
        call::<D>(&idem, &mut tx, "a", false, savepoint)
            .await
            .unwrap(),
        How::Executed
    );
    let first = log.take();
    tx.commit().await.unwrap();
    let mut tx = db.begin().await;
    let _ = log.take();
    assert_eq!(
        call::<D>(&idem, &mut tx, "a", false, savepoint)
            .await
            .unwrap(),
        How::Replayed
    );
    let dup = log.take();
    tx.commit().await.unwrap();
    assert_eq!(db.int("SELECT COUNT(*) FROM idem_records", &[]).await, 1);

    println!(
        "tx_guard {} savepoint={savepoint}: first {first:?}, duplicate {dup:?}, failed body {failed:?}",
        D::NAME
    );
    let with = |claim: &[&str], tail: &[&str]| {
        let mut v: Vec<String> = match savepoint {
            true => vec!["SAVEPOINT".into()],
            false => vec![],
        };
        v.extend(claim.iter().chain(tail).map(|s| (*s).to_owned()));
        v
    };
    // The body's own `INSERT` is the one after the claim.
    assert_eq!(
        first,
        with(claim, &["INSERT", "UPDATE"]),
        "{}: first call",
        D::NAME
    );
    assert_eq!(dup, with(found, &[]), "{}: duplicate", D::NAME);
    let undo: &[&str] = match savepoint {
        true => &["INSERT", "ROLLBACK", "RELEASE"],
        // The body's row, then the claim's compensating `DELETE`.
        false => &["INSERT", "DELETE"],
    };
    assert_eq!(failed, with(claim, undo), "{}: failed body", D::NAME);
}

#[tokio::test]
async fn tx_guard_statements_postgres() {
    statements_per_path::<sqlx::PgPool>(&["WITH"], &["WITH"], true).await;
}

#[tokio::test]
async fn tx_guard_statements_without_savepoint_postgres() {
    statements_per_path::<sqlx::PgPool>(&["WITH"], &["WITH"], false).await;
}

#[tokio::test]
async fn tx_guard_statements_mariadb() {
    statements_per_path::<sqlx::MySqlPool>(&["SELECT", "INSERT"], &["SELECT"], true).await;
}

#[tokio::test]
async fn tx_guard_statements_without_savepoint_mariadb() {
    statements_per_path::<sqlx::MySqlPool>(&["SELECT", "INSERT"], &["SELECT"], false).await;
}
