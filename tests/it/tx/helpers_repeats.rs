//! Repeated requests against the optimistic lock (issue 24, item g): it
//! never applies a repeated request twice, on every database.

use idem::db::Arg;
use idem::db::optimistic::{Optimistic, Versioned};

use crate::tx::support::TestDb;

const TABLES: [&str; 1] = [
    "CREATE TABLE t_item (sku_id VARCHAR(64) NOT NULL PRIMARY KEY, stock BIGINT NOT NULL, version BIGINT NOT NULL, last_req VARCHAR(64))",
];

fn deduct(n: i64) -> Optimistic<'static> {
    Optimistic::new("t_item", "sku_id", "version")
        .unwrap()
        .request_column("last_req")
        .unwrap()
        .add("stock", -n)
        .unwrap()
        .at_least("stock", n)
        .unwrap()
}

async fn stock<D: TestDb>(db: &D) -> i64 {
    db.int("SELECT stock FROM t_item WHERE sku_id = 's1'", &[])
        .await
}

/// r1, r2, then r1 repeated with its stale version: with retries the old
/// helper re-read the version and applied r1 a second time (the request
/// column only remembers the last request). Retries and a request column
/// together are refused before any statement; the request column alone
/// answers the repeat as a conflict.
async fn repeated_request<D: TestDb>() {
    let (db, _place) = D::fixture(&TABLES, 4).await;
    let mut tx = db.begin().await;
    D::exec(
        &mut tx,
        "INSERT INTO t_item (sku_id, stock, version) VALUES ('s1', 11, 0)",
        &[],
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let key = Arg::Text("s1");
    let mut tx = db.begin().await;
    let mut with_retries = Vec::new();
    for (req, expected) in [("r1", 0), ("r2", 1), ("r1", 0)] {
        with_retries.push(
            deduct(2)
                .retries(3)
                .apply(&mut tx, key, expected, req)
                .await,
        );
    }
    tx.commit().await.unwrap();
    let after = stock(&db).await;
    eprintln!(
        "optimistic {}: retries + request column, r1 r2 r1 -> {with_retries:?}, stock {after}",
        D::NAME
    );
    for r in &with_retries {
        assert!(
            matches!(r, Err(idem::Error::Config(m)) if m.contains("request column")),
            "{}: retries with a request column are refused: {r:?}",
            D::NAME
        );
    }
    assert_eq!(after, 11, "{}: nothing applied", D::NAME);
    let mut tx = db.begin().await;
    let mut answers = Vec::new();
    for (req, expected) in [("r1", 0), ("r2", 1), ("r1", 0)] {
        answers.push(deduct(2).apply(&mut tx, key, expected, req).await.unwrap());
    }
    tx.commit().await.unwrap();
    assert_eq!(
        answers,
        [
            Versioned::Applied { version: 1 },
            Versioned::Applied { version: 2 },
            Versioned::Conflict { current: 2 },
        ],
        "{}",
        D::NAME
    );
    assert_eq!(stock(&db).await, 7, "{}: r1 applied once", D::NAME);
}
crate::support::sql::per_database!(generic: optimistic_repeated_request_with_retries_never_applies_twice,
    repeated_request
);
