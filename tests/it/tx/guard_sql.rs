//! The transactional guard's statements against each database's clock
//! (issue 24, item c): expiry is measured when the claim runs, not when the
//! caller's transaction began.

use std::time::Duration;

use idem::{How, Idem};

use crate::support::{AppError, Counter, unique_ns};
use crate::tx::support::{TestDb, V};

pub(crate) const TABLES: [&str; 1] =
    ["CREATE TABLE t_run (id VARCHAR(64) NOT NULL PRIMARY KEY, note VARCHAR(64) NOT NULL)"];

pub(crate) fn handle(store: impl idem::Store) -> Idem {
    Idem::builder()
        .store(store)
        .namespace(unique_ns("txsql"))
        .op_timeout(crate::support::TEST_OP_TIMEOUT)
        .build()
        .unwrap()
}

/// One guarded body in `tx` under `key` with a 2 s ttl: inserts a row with a
/// fresh id, so every run leaves one row.
pub(crate) async fn guarded<D: TestDb>(
    idem: &Idem,
    tx: &mut sqlx::Transaction<'static, D::DB>,
    key: &str,
    runs: &Counter,
) -> (How, idem::Fence) {
    idem.guard("clock", &[&key])
        .ttl(Duration::from_secs(2))
        .lease(Duration::from_secs(1))
        .in_tx(tx)
        .run(|tx, _fence| {
            Box::pin(async move {
                runs.hit();
                let args = [V::S(uuid::Uuid::new_v4().to_string()), V::S(key.to_owned())];
                D::exec(
                    tx.transaction(),
                    "INSERT INTO t_run (id, note) VALUES (?, ?)",
                    &args,
                )
                .await?;
                Ok::<_, AppError>(1_i64)
            })
        })
        .await
        .map(|out| (out.how(), out.fence()))
        .unwrap_or_else(|e| panic!("{}: {e}", D::NAME))
}

/// A transaction opened before a record expired claims the key after the
/// expiry: the record is expired on the clock of the claim, so the body
/// runs (PostgreSQL's `now()` is the transaction's start, at which the
/// record was still live: the old statements replayed it).
async fn opened_before_expiry<D: TestDb>() {
    let (db, _place) = D::fixture(&TABLES, 4).await;
    let idem = handle(db.store());
    let runs = Counter::default();
    // SQLite's `BEGIN IMMEDIATE` holds the write lock: the later transaction
    // can only begin after the first committed (its clock is per statement).
    let early = if D::NAME == "sqlite" {
        None
    } else {
        let mut tx = db.begin().await;
        D::exec(&mut tx, "SELECT COUNT(*) FROM t_run", &[])
            .await
            .unwrap();
        Some(tx)
    };
    let mut first = db.begin().await;
    let (how, fence) = guarded::<D>(&idem, &mut first, "k-1", &runs).await;
    assert_eq!(how, How::Executed);
    first.commit().await.unwrap();
    let mut late = match early {
        Some(tx) => tx,
        None => db.begin().await,
    };
    // The record lives 2 s; 1 s of slack past it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (how, later) = guarded::<D>(&idem, &mut late, "k-1", &runs).await;
    late.commit().await.unwrap();
    let rows = db.int("SELECT COUNT(*) FROM t_run", &[]).await;
    eprintln!(
        "tx_guard_sql {}: transaction opened before the record expired -> {how:?}, bodies {}, rows {rows}",
        D::NAME,
        runs.get()
    );
    assert_eq!(how, How::Executed, "{}: the record had expired", D::NAME);
    assert_eq!(runs.get(), 2, "{}", D::NAME);
    assert_eq!(rows, 2, "{}", D::NAME);
    assert!(later > fence, "{}: fences never go backwards", D::NAME);
}
crate::support::sql::per_database!(generic: transaction_opened_before_record_expired_executes,
    opened_before_expiry
);
