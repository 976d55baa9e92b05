//! Issue 24, defect a: the transactional guard's front store (memory or
//! Redis) never learns a record that its own, uncommitted transaction wrote
//! (PostgreSQL, MariaDB, SQLite × memory and Redis fronts), and learns a
//! committed one with the row's remaining ttl (issue 24, m).

use std::sync::Arc;
use std::time::Duration;

use idem::store::RecordState;
use idem::{How, MemoryStore, Store};

use crate::support::Counter;
use crate::tx::engine::{TABLES, guarded_insert, guarded_insert_for, handle};
use crate::tx::support::TestDb;

/// Defect a: a transaction guards the same key twice (a batch with a repeated
/// event) and rolls back. The front store must not hold the record that was
/// never committed, and the next transaction must execute (one business row).
async fn same_key_twice_then_rollback<D: TestDb>(front: Arc<dyn Store>) {
    let (db, _place) = D::fixture(&TABLES, 4).await;
    let idem = handle(front);
    let runs = Counter::default();
    let mut tx = db.begin().await;
    assert_eq!(
        guarded_insert::<D>(&idem, &mut tx, "r-a", &runs).await,
        How::Executed
    );
    let second = guarded_insert::<D>(&idem, &mut tx, "r-a", &runs).await;
    assert_ne!(
        second,
        How::Executed,
        "{}: one body per key in one transaction",
        D::NAME
    );
    tx.rollback().await.unwrap();
    let key = idem.key("buy", &[&"r-a"]);
    assert!(
        idem.inspect(&key).await.unwrap().is_none(),
        "{}: the front store holds a record that was rolled back",
        D::NAME
    );
    let mut tx = db.begin().await;
    let how = guarded_insert::<D>(&idem, &mut tx, "r-a", &runs).await;
    tx.commit().await.unwrap();
    assert_eq!(how, How::Executed, "{}: the next transaction runs", D::NAME);
    let rows = db.int("SELECT COUNT(*) FROM t_buy", &[]).await;
    assert_eq!(rows, 1, "{}: one business row", D::NAME);
}

async fn same_key_twice_then_rollback_memory_front<D: TestDb>() {
    same_key_twice_then_rollback::<D>(Arc::new(MemoryStore::new())).await;
}
crate::support::sql::per_database!(generic: same_key_twice_in_one_transaction_then_rollback_memory_front,
    same_key_twice_then_rollback_memory_front
);

#[cfg(feature = "redis")]
async fn same_key_twice_then_rollback_redis_front<D: TestDb>() {
    same_key_twice_then_rollback::<D>(crate::support::stores::redis().await).await;
}
#[cfg(feature = "redis")]
crate::support::sql::per_database!(generic: same_key_twice_in_one_transaction_then_rollback_redis_front,
    same_key_twice_then_rollback_redis_front
);

/// Issue 24, m: a record committed with a 60 s ttl and replayed from the table
/// 2 s later is copied into the front store with its time left (at most 58 s),
/// not a fresh 60 s.
async fn republished_with_remaining_ttl<D: TestDb>(front: Arc<dyn Store>) {
    const TTL: Duration = Duration::from_secs(60);
    let (db, _place) = D::fixture(&TABLES, 4).await;
    let idem = handle(front);
    let runs = Counter::default();
    let mut tx = db.begin().await;
    let how = guarded_insert_for::<D>(&idem, &mut tx, "r-m", &runs, Some(TTL)).await;
    tx.commit().await.unwrap();
    assert_eq!(how, How::Executed);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut tx = db.begin().await;
    let how = guarded_insert_for::<D>(&idem, &mut tx, "r-m", &runs, Some(TTL)).await;
    tx.commit().await.unwrap();
    assert_eq!(how, How::Replayed, "{}: replayed from the table", D::NAME);
    let key = idem.key("buy", &[&"r-m"]);
    match idem.inspect(&key).await.unwrap() {
        Some(RecordState::Done { remaining, .. }) => assert!(
            remaining <= TTL - Duration::from_secs(1) && !remaining.is_zero(),
            "{}: the front learned {remaining:?} of a {TTL:?} record 2 s old",
            D::NAME
        ),
        other => panic!("{}: the front did not learn the record: {other:?}", D::NAME),
    }
    assert_eq!(runs.get(), 1);
    let rows = db.int("SELECT COUNT(*) FROM t_buy", &[]).await;
    assert_eq!(rows, 1, "{}: one business row", D::NAME);
}

async fn republished_with_remaining_ttl_memory_front<D: TestDb>() {
    republished_with_remaining_ttl::<D>(Arc::new(MemoryStore::new())).await;
}
crate::support::sql::per_database!(generic: front_store_learns_replayed_record_with_remaining_ttl_memory_front,
    republished_with_remaining_ttl_memory_front
);

#[cfg(feature = "redis")]
async fn republished_with_remaining_ttl_redis_front<D: TestDb>() {
    republished_with_remaining_ttl::<D>(crate::support::stores::redis().await).await;
}
#[cfg(feature = "redis")]
crate::support::sql::per_database!(generic: front_store_learns_replayed_record_with_remaining_ttl_redis_front,
    republished_with_remaining_ttl_redis_front
);
