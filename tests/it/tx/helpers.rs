//! The optimistic lock, the pessimistic lock and insert-once, per database.

use std::sync::Arc;

use idem::db::Arg;
use idem::db::insert_once::{InsertOnce, Inserted};
use idem::db::optimistic::{Optimistic, Versioned};
use idem::db::pessimistic::{RowLock, transaction};

use crate::support::AppError;
use crate::tx::support::{TestDb, V};

const TABLES: [&str; 8] = [
    "CREATE TABLE t_item (sku_id VARCHAR(64) NOT NULL PRIMARY KEY, stock BIGINT NOT NULL, version BIGINT NOT NULL, last_req VARCHAR(64))",
    "CREATE TABLE t_pay (order_no VARCHAR(64) NOT NULL PRIMARY KEY, paid BIGINT NOT NULL, refunded BIGINT NOT NULL, note VARCHAR(64))",
    "CREATE TABLE t_refund (id BIGINT NOT NULL, refund_id VARCHAR(64) NOT NULL, amount BIGINT NOT NULL)",
    "CREATE UNIQUE INDEX uk_refund_id ON t_refund (refund_id)",
    "CREATE TABLE t_parent (order_no VARCHAR(64) NOT NULL, total BIGINT NOT NULL)",
    "CREATE UNIQUE INDEX uk_parent_order_no ON t_parent (order_no)",
    "CREATE TABLE t_child (order_no VARCHAR(64) NOT NULL, line BIGINT NOT NULL)",
    "INSERT INTO t_pay (order_no, paid, refunded, note) VALUES ('o-1', 100, 0, 'n')",
];

/// "Version moved" (conflict), "already applied" and "insufficient stock"
/// (precondition) are distinct answers; a missing row is `NotFound`.
async fn optimistic<D: TestDb>() {
    let (db, _place) = D::fixture(&TABLES, 4).await;
    let mut tx = db.begin().await;
    D::exec(
        &mut tx,
        "INSERT INTO t_item (sku_id, stock, version) VALUES ('s1', 5, 0)",
        &[],
    )
    .await
    .unwrap();
    let idem = idem::Idem::builder()
        .store(idem::MemoryStore::new())
        .namespace(crate::support::unique_ns("opt"))
        .build()
        .unwrap();
    let deduct = |n: i64| {
        Optimistic::new("t_item", "sku_id", "version")
            .unwrap()
            .handle(&idem)
            .request_column("last_req")
            .unwrap()
            .add("stock", -n)
            .unwrap()
            .at_least("stock", n)
            .unwrap()
    };
    let key = Arg::Text("s1");
    let r = deduct(3).apply(&mut tx, key, 0, "req-a").await.unwrap();
    assert_eq!(r, Versioned::Applied { version: 1 }, "{}", D::NAME);
    let r = deduct(3).apply(&mut tx, key, 0, "req-a").await.unwrap();
    assert_eq!(r, Versioned::AlreadyApplied { version: 1 }, "{}", D::NAME);
    let r = deduct(1).apply(&mut tx, key, 0, "req-b").await.unwrap();
    assert_eq!(
        r,
        Versioned::Conflict { current: 1 },
        "{}: version moved",
        D::NAME
    );
    let r = deduct(3).apply(&mut tx, key, 1, "req-c").await.unwrap();
    assert_eq!(
        r,
        Versioned::PreconditionFailed { version: 1 },
        "{}: insufficient stock",
        D::NAME
    );
    // Retries are for changes without a request identity (a counter): with
    // the request column they are refused (issue 24 g,
    // `optimistic_repeated_request_with_retries_never_applies_twice`).
    let counter = Optimistic::new("t_item", "sku_id", "version")
        .unwrap()
        .handle(&idem)
        .add("stock", -1)
        .unwrap()
        .at_least("stock", 1)
        .unwrap();
    let r = counter
        .retries(2)
        .apply(&mut tx, key, 0, "req-d")
        .await
        .unwrap();
    assert_eq!(
        r,
        Versioned::Applied { version: 2 },
        "{}: opted-in retry",
        D::NAME
    );
    let missing = deduct(1)
        .apply(&mut tx, Arg::Text("nope"), 0, "req-e")
        .await;
    assert!(
        matches!(missing, Err(idem::Error::NotFound { .. })),
        "{missing:?}"
    );
    tx.commit().await.unwrap();
    let stock = db
        .int("SELECT stock FROM t_item WHERE sku_id = 's1'", &[])
        .await;
    assert_eq!(stock, 1, "{}: 5 - 3 - 1", D::NAME);
    eprintln!(
        "optimistic {}: applied v1, repeat -> already_applied, stale -> conflict, stock 2 < 3 -> precondition_failed, retry -> applied v2, stock {stock}",
        D::NAME
    );
}
crate::support::sql::per_database!(generic: optimistic_answers_are_distinct, optimistic);

/// The pessimistic lock refuses a key column no index starts with
/// (PostgreSQL, MariaDB; SQLite locks the database, nothing to check).
async fn unindexed<D: TestDb>() {
    let (db, _place) = D::fixture(&TABLES, 4).await;
    let mut tx = db.begin().await;
    let r = RowLock::new("t_pay", "note")
        .unwrap()
        .lock(&mut tx, Arg::Text("n"))
        .await;
    match D::NAME {
        "sqlite" => assert!(r.unwrap()),
        _ => match r {
            Err(idem::Error::Config(m)) => assert!(m.contains("index"), "{m}"),
            other => panic!("{}: {other:?}", D::NAME),
        },
    }
    let ok = RowLock::new("t_pay", "order_no")
        .unwrap()
        .lock(&mut tx, Arg::Text("o-1"))
        .await
        .unwrap();
    assert!(ok, "{}", D::NAME);
    let absent = RowLock::new("t_pay", "order_no")
        .unwrap()
        .lock(&mut tx, Arg::Text("o-2"))
        .await
        .unwrap();
    assert!(!absent);
}
crate::support::sql::per_database!(generic: pessimistic_lock_refuses_unindexed_column, unindexed);

/// Refunds under the pessimistic lock, deduplicated by insert-once on the
/// refund id: 50 requests (10 ids x 5), each its own retried transaction.
async fn refunds_locked<D: TestDb>() {
    let (db, _place) = D::fixture(&TABLES, 12).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = tokio::task::JoinSet::new();
    for id in 0..10_i64 {
        for _ in 0..5 {
            let (db, barrier) = (db.clone(), Arc::clone(&barrier));
            tasks.spawn(async move {
                barrier.wait().await;
                let refund = format!("rf-{id}");
                let amount = 15; // 10 x 15 = 150 > 100 paid: some must be refused
                transaction(db.pool(), |tx| {
                    let refund = refund.clone();
                    Box::pin(async move {
                        RowLock::new("t_pay", "order_no")?
                            .lock(tx, Arg::Text("o-1"))
                            .await?;
                        let r = InsertOnce::new("uk_refund_id")
                            .run(
                                tx,
                                &refund,
                                |tx| {
                                    let refund = refund.clone();
                                    Box::pin(async move {
                                        let args = [V::I(amount), V::I(amount)];
                                        let ok = D::exec(
                                            tx.transaction(),
                                            "UPDATE t_pay SET refunded = refunded + ? WHERE order_no = 'o-1' AND refunded + ? <= paid",
                                            &args,
                                        )
                                        .await?;
                                        let args = [V::I(ok as i64), V::S(refund), V::I(amount * ok as i64)];
                                        D::exec(
                                            tx.transaction(),
                                            "INSERT INTO t_refund (id, refund_id, amount) VALUES (?, ?, ?)",
                                            &args,
                                        )
                                        .await?;
                                        Ok(ok == 1)
                                    })
                                },
                                |_tx| Box::pin(async move { Ok(false) }),
                            )
                            .await?;
                        Ok::<_, AppError>(r)
                    })
                })
                .await
                .unwrap_or_else(|e| panic!("refund {id}: {e}"))
            });
        }
    }
    let answers = tasks.join_all().await;
    let new = answers.iter().filter(|r| !r.is_existing()).count();
    let refunded = db
        .int("SELECT refunded FROM t_pay WHERE order_no = 'o-1'", &[])
        .await;
    let rows = db.int("SELECT COUNT(*) FROM t_refund", &[]).await;
    let granted = db
        .int("SELECT COUNT(*) FROM t_refund WHERE amount > 0", &[])
        .await;
    eprintln!(
        "pessimistic+insert_once {}: 50 refund calls (10 ids x 5, 15 each on 100 paid) -> {new} inserted, {} duplicates, {granted} granted, refunded {refunded}",
        D::NAME,
        50 - new
    );
    assert_eq!(new, 10, "{}: one insert per refund id", D::NAME);
    assert_eq!(rows, 10);
    assert_eq!(granted, 6, "{}: 6 x 15 = 90 fits in 100", D::NAME);
    assert_eq!(refunded, granted * 15);
    assert!(refunded <= 100);
    let _ = answers.into_iter().map(Inserted::into_inner).count();
}
crate::support::sql::per_database!(generic: refunds_under_row_lock_deduplicated_by_insert_once,
    refunds_locked
);

/// A duplicate parent/child insert: one parent, its children once, no
/// orphans (the children written before the parent's violation roll back).
async fn parent_child<D: TestDb>() {
    let (db, _place) = D::fixture(&TABLES, 4).await;
    let mut answers = Vec::new();
    for _ in 0..3 {
        let mut tx = db.begin().await;
        let r = InsertOnce::new("uk_parent_order_no")
            .run(
                &mut tx,
                "po-1",
                |tx| {
                    Box::pin(async move {
                        // Children first, so a duplicate has something to undo.
                        for line in 1..=3 {
                            D::exec(
                                tx.transaction(),
                                "INSERT INTO t_child (order_no, line) VALUES ('po-1', ?)",
                                &[V::I(line)],
                            )
                            .await?;
                        }
                        D::exec(
                            tx.transaction(),
                            "INSERT INTO t_parent (order_no, total) VALUES ('po-1', 30)",
                            &[],
                        )
                        .await?;
                        Ok(30_i64)
                    })
                },
                |tx| {
                    Box::pin(async move {
                        // The existing parent (rows matched; MySQL counts found rows).
                        let n = D::exec(
                            tx.transaction(),
                            "UPDATE t_parent SET total = total WHERE order_no = 'po-1'",
                            &[],
                        )
                        .await?;
                        Ok(30 * n as i64)
                    })
                },
            )
            .await
            .unwrap();
        tx.commit().await.unwrap();
        answers.push(r);
    }
    assert_eq!(answers[0], Inserted::New(30), "{}", D::NAME);
    assert_eq!(answers[1], Inserted::Existing(30));
    assert_eq!(answers[2], Inserted::Existing(30));
    let parents = db.int("SELECT COUNT(*) FROM t_parent", &[]).await;
    let children = db.int("SELECT COUNT(*) FROM t_child", &[]).await;
    let orphans = db
        .int(
            "SELECT COUNT(*) FROM t_child c WHERE NOT EXISTS (SELECT 1 FROM t_parent p WHERE p.order_no = c.order_no)",
            &[],
        )
        .await;
    eprintln!(
        "insert_once {}: 3 inserts of one order -> new 1, existing 2; parents {parents}, children {children}, orphans {orphans}",
        D::NAME
    );
    assert_eq!((parents, children, orphans), (1, 3, 0), "{}", D::NAME);
}
crate::support::sql::per_database!(generic: duplicate_parent_child_insert_leaves_no_orphans,
    parent_child
);
