//! Statements per path on each SQL store, pinned: the figures of BENCHMARKS.md
//! ("Round trips per path") and of the store's module docs. The store counts
//! every statement it sends (`SqlStore::__statements_sent`: each statement is
//! built by one function that counts it, and the transactions count their
//! `BEGIN` and `COMMIT`), so an extra statement on a path fails here. Claims the
//! local claim cache answers send nothing, and that is pinned too.

use std::sync::Arc;
use std::time::Duration;

use idem::db::Dialect;
use idem::fingerprint::Fingerprint;
use idem::store::{Claim, ClaimRequest, Owner};
use idem::{Error, How, Idem, Store};

use crate::sql::store::handle;
use crate::support::sql::Fixture;

/// Statements sent per path: (duplicate of a finished key, first call, failed body).
fn expected(dialect: Dialect) -> (u64, u64, u64) {
    match dialect {
        // The claim CTE (reads the live row, or inserts), then `complete` /
        // `release`: two autocommitted statements.
        Dialect::Postgres => (1, 2, 2),
        // `select_live`; for a missing key `BEGIN`, `next_fence`, the upsert,
        // `COMMIT`; then `complete` / `release`. SQLite's transaction is a
        // `BEGIN IMMEDIATE` with the same shape.
        Dialect::MySql | Dialect::Sqlite => (1, 6, 6),
        other => panic!("no figures for {other:?}"),
    }
}

/// One guarded call whose body succeeds.
async fn call(idem: &Idem, id: &str) -> How {
    idem.guard("order-create", &[&id])
        .run(|| async { Ok::<_, Error>("x".repeat(200)) })
        .await
        .unwrap()
        .how()
}

/// One guarded call whose body fails.
async fn fail(idem: &Idem, id: &str) {
    let r = idem
        .guard("order-create", &[&id])
        .run(|| async { Err::<(), _>(Error::Config("no".into())) })
        .await;
    assert!(r.is_err(), "the body's error is returned: {r:?}");
}

async fn round_trips_per_path(dialect: Dialect) {
    let fx = Fixture::new(dialect).await;
    let idem = handle(fx.dyn_store());
    let sent = || fx.store.__statements_sent();
    let (dup, first, failed) = expected(dialect);

    let before = sent();
    assert_eq!(call(&idem, "a").await, How::Executed);
    let first_sent = sent() - before;

    let before = sent();
    assert_eq!(call(&idem, "a").await, How::Replayed);
    let dup_sent = sent() - before;

    let before = sent();
    fail(&idem, "b").await;
    let failed_sent = sent() - before;
    println!(
        "{dialect:?} statements: first call {first_sent}, duplicate {dup_sent}, failed body {failed_sent}"
    );
    assert_eq!(
        first_sent, first,
        "{dialect:?} first call (claim + complete)"
    );
    assert_eq!(dup_sent, dup, "{dialect:?} duplicate of a finished key");
    assert_eq!(
        failed_sent, failed,
        "{dialect:?} failed body (claim + release)"
    );

    // The failed body left no record: calling again runs the body (first-call cost).
    let before = sent();
    assert_eq!(call(&idem, "b").await, How::Executed);
    assert_eq!(sent() - before, first, "{dialect:?} retry after a failure");

    // Local duplicates of a claim in progress here are answered without a
    // statement, for its owner and for others; its completion is one statement.
    let store = &*fx.store;
    let (mine, other) = (Owner::fresh(), Owner::fresh());
    let req = |owner| ClaimRequest {
        key: "rt:local",
        owner,
        fingerprint: Fingerprint([3; 16]),
        lease: Duration::from_secs(30),
    };
    let before = sent();
    let Claim::Claimed { fence } = store.claim(req(mine)).await.unwrap() else {
        panic!("fresh key not claimed")
    };
    let claim_sent = sent() - before;
    assert_eq!(claim_sent, first - 1, "{dialect:?} claim of a missing key");
    let before = sent();
    assert_eq!(
        store.claim(req(mine)).await.unwrap(),
        Claim::Claimed { fence }
    );
    assert!(matches!(
        store.claim(req(other)).await.unwrap(),
        Claim::Busy { .. }
    ));
    assert_eq!(sent() - before, 0, "{dialect:?} local duplicates");
    let before = sent();
    store
        .complete("rt:local", mine, b"done", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(sent() - before, 1, "{dialect:?} complete");
    let before = sent();
    assert!(matches!(
        store.claim(req(other)).await.unwrap(),
        Claim::Done(_)
    ));
    assert_eq!(sent() - before, dup, "{dialect:?} claim of a finished key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trips_per_path_postgres() {
    round_trips_per_path(Dialect::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trips_per_path_mariadb() {
    round_trips_per_path(Dialect::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trips_per_path_sqlite() {
    round_trips_per_path(Dialect::Sqlite).await;
}

/// The server's own count agrees with the store's on MariaDB: `Questions` of the
/// one session the store's one-connection pool uses (the reading itself is one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_server_counts_the_same_statements() {
    let fx = Fixture::new(Dialect::MySql).await;
    let pool = crate::support::sql::connect_mysql(&fx.db.url(), 1).await;
    let store = idem::store::sql::SqlStore::mysql(pool.clone()).with_tables(fx.names.clone());
    let questions = || {
        let pool = pool.clone();
        async move {
            let row = sqlx::query_as::<_, (String, String)>("SHOW SESSION STATUS LIKE 'Questions'")
                .fetch_one(&pool)
                .await
                .unwrap();
            row.1.parse::<u64>().unwrap()
        }
    };
    let idem = handle(Arc::new(store.clone()));
    // Warm the connection's prepared statements (a first use prepares).
    assert_eq!(call(&idem, "warm").await, How::Executed);
    assert_eq!(call(&idem, "warm").await, How::Replayed);
    let counts = || async { (questions().await, store.__statements_sent()) };
    let agree = |path: &str, (q0, s0): (u64, u64), (q1, s1): (u64, u64)| {
        // `q0` includes the first reading; `q1` counts the second one.
        let (server, counted) = (q1 - q0 - 1, s1 - s0);
        println!("MariaDB {path}: server {server}, store {counted}");
        assert_eq!(server, counted, "{path}");
        assert!(counted >= 1, "{path}: nothing was sent");
    };
    for (id, how, path) in [
        ("a", How::Executed, "first call"),
        ("a", How::Replayed, "duplicate"),
    ] {
        let before = counts().await;
        assert_eq!(call(&idem, id).await, how);
        agree(path, before, counts().await);
    }
    let before = counts().await;
    fail(&idem, "b").await;
    agree("failed body", before, counts().await);
}
