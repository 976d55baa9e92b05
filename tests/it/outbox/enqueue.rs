//! `Outbox::enqueue` in the caller's transaction, on PostgreSQL, MariaDB and
//! SQLite: the message commits and rolls back with the business rows; a
//! retried business transaction gets the same id and adds no row; another
//! payload for the same (topic, business id) is refused; an
//! `#[idempotent(tx = …)]` body enqueues in its own transaction.

use std::sync::Arc;

use idem::db::Dialect;
use idem::outbox::{Outbox, OutboxTable};

use crate::outbox::support::{OrderMsg, business_tx, producer_db, try_business_tx};
use crate::support::{AppError, Counter};

fn msg(business_id: &str, step: i64) -> OrderMsg {
    OrderMsg {
        id: String::new(),
        topic: "orders".into(),
        business_id: business_id.into(),
        step,
        key: String::new(),
    }
}

async fn enqueue_semantics(dialect: Dialect) {
    let db = producer_db(dialect).await;
    let rows = |sql: &'static str| {
        let db = &db;
        async move { db.scalar(sql).await }
    };
    let t = OutboxTable::default();
    let first = business_tx(&db, t, &msg("o-1", 0), false).await;
    assert_eq!(first, t.message_id("orders", "o-1"), "the id is derived");
    // The business transaction retried after a lost commit reply.
    let again = business_tx(&db, t, &msg("o-1", 0), false).await;
    assert_eq!(again, first, "a retried transaction gets the same id");
    assert_eq!(
        rows("SELECT COUNT(*) FROM idem_outbox").await,
        1,
        "and adds no row"
    );
    // Rolled back: neither the order nor the message stays.
    business_tx(&db, t, &msg("o-2", 0), true).await;
    assert_eq!(rows("SELECT COUNT(*) FROM idem_outbox").await, 1);
    // Another payload for the same pair.
    match try_business_tx(&db, t, &msg("o-1", 7), false).await {
        Err(AppError::Idem(idem::Error::PayloadMismatch { key, .. })) => {
            assert_eq!(key, first.to_string())
        }
        other => panic!("expected PayloadMismatch, got {other:?}"),
    }
    // The same business id on another topic is another message.
    let mut other = msg("o-1", 0);
    other.topic = "orders.paid".into();
    let paid = business_tx(&db, t, &other, false).await;
    assert_ne!(paid, first);
    assert_eq!(rows("SELECT COUNT(*) FROM idem_outbox").await, 2);
    assert_eq!(
        rows("SELECT COUNT(*) FROM idem_outbox WHERE state = 0 AND attempts = 0").await,
        2,
        "pending, never tried"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_commits_with_the_business_rows_postgres() {
    enqueue_semantics(Dialect::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_commits_with_the_business_rows_mariadb() {
    enqueue_semantics(Dialect::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_commits_with_the_business_rows_sqlite() {
    enqueue_semantics(Dialect::Sqlite).await;
}

/// The order and its message in one `#[idempotent(tx = tx)]` body.
#[idem::idempotent(key = "outbox-order:<order_no>", tx = tx, handle = idem)]
async fn place_order(
    idem: &idem::Idem,
    runs: &Counter,
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    order_no: &str,
) -> Result<String, AppError> {
    runs.hit();
    sqlx::query("INSERT INTO orders VALUES ($1, 1)")
        .bind(order_no)
        .execute(&mut **tx)
        .await?;
    let id = Outbox::enqueue(&mut *tx, "orders", order_no, b"{}").await?;
    Ok(id.to_string())
}

/// Called twice: the body runs once, the replay returns the same message id,
/// and the outbox holds one message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_tx_body_enqueues_once() {
    let db = producer_db(Dialect::Postgres).await;
    let idem = idem::Idem::builder()
        .store(db.store.clone())
        .namespace(crate::support::unique_ns("obx-tx"))
        .build()
        .unwrap();
    let runs = Counter(Arc::default());
    let mut ids = Vec::new();
    for _ in 0..2 {
        let mut tx = db.pg().begin().await.unwrap();
        ids.push(place_order(&idem, &runs, &mut tx, "o-9").await.unwrap());
        tx.commit().await.unwrap();
    }
    assert_eq!(runs.get(), 1, "the body ran once");
    assert_eq!(ids[0], ids[1], "the replay returns the same message id");
    assert_eq!(db.scalar("SELECT COUNT(*) FROM idem_outbox").await, 1);
}
