//! The batched consumer's transaction on PostgreSQL, MariaDB and SQLite,
//! one batch at a time (`Batch::consume`, no broker): one statement per
//! batch finds the redelivered message ids and the re-sent business ids,
//! records of one key inside a batch apply once, a failing record is rolled
//! back alone (its refund row and log row) while the others commit, and
//! concurrent batches of the same facts apply each once.

use std::sync::Arc;

use idem::consume::RecordOutcome::{Duplicate as Dup, Failed, Processed as Done};
use idem::consume::{Delivery, RecordOutcome};
use idem::db::Dialect;

use crate::consume::batch_support::{consume, delivery};
use crate::consume::support::LogDb;
use crate::support::handle;
use crate::support::sql::per_database;

fn d(id: &str, order_no: &str) -> Delivery {
    delivery(id, order_no, false)
}

fn kinds(out: &[RecordOutcome]) -> Vec<RecordOutcome> {
    out.iter()
        .map(|o| match o {
            Failed(_) => Failed(String::new()),
            o => o.clone(),
        })
        .collect()
}

async fn batch_dedupes_message_and_business_ids(dialect: Dialect) {
    let db = LogDb::new(dialect).await;
    let idem = handle(Arc::new(db.store.clone()), "batch");
    let first: Vec<Delivery> = (0..10)
        .map(|i| d(&format!("m-{i}"), &format!("o-{i}")))
        .collect();
    let out = consume(&db, &idem, &first).await;
    assert_eq!(out, vec![Done; 10]);
    assert_eq!((db.refunds().await, db.log_rows().await), (10, 10));
    let second = [
        d("m-0", "o-0"),   // redelivered
        d("m-1", "o-1"),   // redelivered
        d("n-5", "o-5"),   // the same refund under a new message id
        d("n-6", "o-6"),   // the same refund under a new message id
        d("m-20", "o-20"), // new
        d("m-21", "o-20"), // the same refund, in this batch
        d("m-22", "o-22"), // new
        d("m-22", "o-22"), // the same message twice in this batch
        d("m-23", "o-23"), // new
        d("m-24", ""),     // new, without a business id
    ];
    let out = consume(&db, &idem, &second).await;
    assert_eq!(
        out,
        [Dup, Dup, Dup, Dup, Done, Dup, Done, Dup, Done, Done],
        "{dialect:?}"
    );
    assert_eq!(db.refunds().await, 14, "one refund per order");
    assert_eq!(db.double_refunds().await, 0);
    assert_eq!(db.log_rows().await, 14);
    let stats = idem.stats();
    assert_eq!(
        (stats.count("executed"), stats.count("duplicate_message")),
        (14, 6)
    );
}

async fn a_failing_record_is_rolled_back_alone(dialect: Dialect) {
    let db = LogDb::new(dialect).await;
    let idem = handle(Arc::new(db.store.clone()), "batch-fail");
    let mut unreadable = d("m-3", "o-3");
    unreadable.payload = b"not json".to_vec();
    let batch = [
        d("m-0", "o-0"),
        delivery("m-1", "o-1", true), // its body writes, then fails
        d("m-2", "o-1"),              // the same refund: runs once m-1 failed
        unreadable,
        d("m-4", "o-4"),
    ];
    let out = consume(&db, &idem, &batch).await;
    assert_eq!(
        kinds(&out),
        [
            Done,
            Failed(String::new()),
            Done,
            Failed(String::new()),
            Done
        ],
        "{dialect:?}"
    );
    assert!(
        matches!(&out[1], Failed(e) if e.contains("refused")),
        "{out:?}"
    );
    assert!(
        matches!(&out[3], Failed(e) if e.contains("bad payload")),
        "{out:?}"
    );
    assert_eq!(db.refunds().await, 3, "the failed body's row is gone");
    assert_eq!(db.log_rows().await, 3, "so is its log row");
    let m1 = db
        .scalar("SELECT COUNT(*) FROM refunds WHERE msg_id = 'm-1'")
        .await;
    assert_eq!(m1, 0);
    // Two failures in one batch, beside a good record; then the failed
    // message redelivered, now good: its refund came through m-2.
    let out = consume(
        &db,
        &idem,
        &[
            delivery("m-5", "o-5", true),
            d("m-6", "o-6"),
            delivery("m-7", "o-7", true),
            d("m-1", "o-1"),
        ],
    )
    .await;
    assert_eq!(
        kinds(&out),
        [Failed(String::new()), Done, Failed(String::new()), Dup]
    );
    assert_eq!((db.refunds().await, db.log_rows().await), (4, 4));
    let stats = idem.stats();
    assert_eq!(stats.count("released"), 3, "the failed bodies, each alone");
    assert_eq!(stats.count("failed"), 0, "no batch failed as a whole");
    assert_eq!(stats.count("executed"), 4);
}

/// Four batches at once, each with the same 60 refunds under their own
/// message ids and in their own order: each refund is applied once.
async fn concurrent_batches_apply_each_order_once(dialect: Dialect) {
    let db = Arc::new(LogDb::with_pool(dialect, 6).await);
    let idem = handle(Arc::new(db.store.clone()), "batch-race");
    let mut tasks = Vec::new();
    for t in 0..4usize {
        let (db, idem) = (db.clone(), idem.clone());
        tasks.push(tokio::spawn(async move {
            let mut batch: Vec<Delivery> = (0..60)
                .map(|i| d(&format!("m-{t}-{i}"), &format!("o-{i}")))
                .collect();
            batch.rotate_left(t * 15);
            if t % 2 == 1 {
                batch.reverse();
            }
            consume(&db, &idem, &batch).await
        }));
    }
    let mut done = 0;
    for t in tasks {
        let out = t.await.unwrap();
        assert!(
            out.iter().all(|o| matches!(o, Done | Dup)),
            "{dialect:?}: {out:?}"
        );
        done += out.iter().filter(|o| **o == Done).count();
    }
    assert_eq!(done, 60, "{dialect:?}");
    assert_eq!(db.refunds().await, 60);
    assert_eq!(db.double_refunds().await, 0);
    assert_eq!(db.log_rows().await, 60);
}

per_database!(
    batch_dedupes_message_and_business_ids,
    a_failing_record_is_rolled_back_alone,
    concurrent_batches_apply_each_order_once,
);
