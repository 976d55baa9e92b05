//! Issue 24, defect a: the transactional guard's front store (memory or
//! Redis) never learns a record that its own, uncommitted transaction wrote
//! (PostgreSQL, MariaDB, SQLite × memory and Redis fronts).

use std::sync::Arc;

use idem::{How, MemoryStore, Store};

use crate::engine_tx::{TABLES, guarded_insert, handle};
use crate::support::Counter;
use crate::tx_support::{TestDb, per_db};

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
per_db!(
    same_key_twice_in_one_transaction_then_rollback_memory_front,
    same_key_twice_then_rollback_memory_front
);

#[cfg(feature = "redis")]
async fn same_key_twice_then_rollback_redis_front<D: TestDb>() {
    same_key_twice_then_rollback::<D>(crate::lock_fenced::shared_redis().await).await;
}
#[cfg(feature = "redis")]
per_db!(
    same_key_twice_in_one_transaction_then_rollback_redis_front,
    same_key_twice_then_rollback_redis_front
);
