//! A state transition that loses to a concurrent transaction is
//! `Error::TxConflict` (roll back and retry the transaction), on each
//! database's own way of losing (issue 24, item i): PostgreSQL's
//! serialization failure under `REPEATABLE READ` (40001), a MariaDB deadlock
//! victim (1213), SQLite's stale read snapshot (517).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idem::Transition;

use crate::state::order::{AppError, OrderStatus};

type Moved = Result<Transition<()>, AppError>;

/// `WAIT_PAY -> PAY_SUCCESS` of `no` in `conn`, counting body runs.
async fn pay<C>(conn: &mut C, no: &str, runs: &AtomicUsize) -> Moved
where
    C: idem::state::StateConn + ?Sized,
    String: for<'q> sqlx::Encode<'q, C::Db> + sqlx::Type<C::Db>,
{
    let no = no.to_owned();
    idem::state::transition(conn, "t_order", "order_no", &no)
        .from(OrderStatus::WaitPay)
        .to(OrderStatus::PaySuccess)
        .version_column("version")
        .run(async |_| {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .await
}

fn assert_conflict(r: &Moved, db: &str) {
    assert!(
        matches!(r, Err(AppError::Idem(idem::Error::TxConflict { .. }))),
        "{db}: a transition lost to a concurrent transaction is TxConflict, got {r:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_transition_losing_under_repeatable_read_is_tx_conflict() {
    let (pool, _place) = crate::state::support::pg().await;
    sqlx::query("INSERT INTO t_order (order_no, status) VALUES ('o-1', 'WAIT_PAY')")
        .execute(&pool)
        .await
        .unwrap();
    let runs = AtomicUsize::new(0);
    let mut late = pool
        .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .await
        .unwrap();
    sqlx::query("SELECT COUNT(*) FROM t_order")
        .execute(&mut *late)
        .await
        .unwrap(); // the snapshot
    let mut first = pool.begin().await.unwrap();
    assert!(pay(&mut first, "o-1", &runs).await.unwrap().is_applied());
    first.commit().await.unwrap();
    let r = pay(&mut late, "o-1", &runs).await;
    eprintln!("state_conflicts postgres: REPEATABLE READ loser -> {r:?}");
    assert_conflict(&r, "postgres");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_transition_chosen_as_deadlock_victim_is_tx_conflict() {
    let (pool, _place) = crate::state::support::mysql().await;
    sqlx::query(
        "INSERT INTO t_order (order_no, status) VALUES ('o-1', 'WAIT_PAY'), ('o-2', 'WAIT_PAY')",
    )
    .execute(&pool)
    .await
    .unwrap();
    let runs = AtomicUsize::new(0);
    let bump =
        |no: &str| format!("UPDATE t_order SET version = version + 1 WHERE order_no = '{no}'");
    // The transition's transaction holds `o-2` and is light; the other one
    // holds `o-1` and has written 20 rows, so InnoDB picks the transition's
    // transaction as the victim whichever of the two closes the cycle.
    let mut light = pool.begin().await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(bump("o-2")))
        .execute(&mut *light)
        .await
        .unwrap();
    let mut heavy = pool.begin().await.unwrap();
    for i in 0..20 {
        sqlx::query("INSERT INTO t_note (id) VALUES (?)")
            .bind(format!("n-{i}"))
            .execute(&mut *heavy)
            .await
            .unwrap();
    }
    sqlx::raw_sql(sqlx::AssertSqlSafe(bump("o-1")))
        .execute(&mut *heavy)
        .await
        .unwrap();
    let (r, other) = tokio::join!(pay(&mut light, "o-1", &runs), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        sqlx::raw_sql(sqlx::AssertSqlSafe(bump("o-2")))
            .execute(&mut *heavy)
            .await
    });
    eprintln!("state_conflicts mariadb: deadlock -> transition {r:?}, other {other:?}");
    other.expect("the heavy transaction survives the deadlock");
    heavy.commit().await.unwrap();
    drop(light);
    assert_conflict(&r, "mariadb");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_transition_on_a_stale_snapshot_is_tx_conflict() {
    let (pool, _place) = crate::state::support::sqlite().await;
    sqlx::query("INSERT INTO t_order (order_no, status) VALUES ('o-1', 'WAIT_PAY')")
        .execute(&pool)
        .await
        .unwrap();
    let runs = AtomicUsize::new(0);
    // A deferred transaction that read before another connection wrote cannot
    // become a writer (SQLITE_BUSY_SNAPSHOT, 517).
    let mut deferred = pool.begin().await.unwrap();
    sqlx::query("SELECT COUNT(*) FROM t_order")
        .execute(&mut *deferred)
        .await
        .unwrap();
    let mut other = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
    sqlx::query("INSERT INTO t_note (id) VALUES ('w')")
        .execute(&mut *other)
        .await
        .unwrap();
    other.commit().await.unwrap();
    let r = pay(&mut deferred, "o-1", &runs).await;
    eprintln!("state_conflicts sqlite: stale snapshot -> {r:?}");
    assert_conflict(&r, "sqlite");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}
