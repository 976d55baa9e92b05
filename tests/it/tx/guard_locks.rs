//! Claims held in the caller's transaction against other keys (issue 24,
//! item d): a transactional-guard claim locks nothing another key needs for
//! the caller's whole transaction, and a guard nested in a transactional
//! body never waits for its own transaction.

use std::sync::Arc;
use std::time::Duration;

use idem::{How, Idem};

use crate::support::{AppError, Counter, unique_ns};
use crate::tx::guard_sql::{TABLES, guarded};
use crate::tx::support::TestDb;

/// How many in-transaction claims the caller holds open: on MySQL/MariaDB the
/// old claim locked its key's fence slot (one of 64) until the caller's
/// commit, so 16 held claims covered about a fifth of the slots.
const HELD: usize = 16;

/// While a caller's transaction holds `HELD` claims open for 3 s, 50 unrelated
/// keys are claimed through the handle's SQL store (other requests of the same
/// service), and 8 more by guards nested in the transactional body: none of
/// them may wait for the caller's transaction or fail.
async fn held_claims_block_nothing<D: TestDb>() {
    let (db, _place) = D::fixture(&TABLES, 16).await;
    // A claim that waits for the caller's transaction never answers before
    // it commits, and it commits only after every claim below answered: such
    // a claim fails after its attempts whatever the operation timeout, so the
    // timeout is generous for a loaded machine (50 claims start at once).
    let idem = Arc::new(
        Idem::builder()
            .store(db.store())
            .namespace(unique_ns("txlocks"))
            .op_timeout(Duration::from_secs(2))
            .build()
            .unwrap(),
    );
    let runs = Counter::default();
    let mut tx = db.begin().await;
    for i in 0..HELD {
        let (how, _) = guarded::<D>(&idem, &mut tx, &format!("held-{i}"), &runs).await;
        assert_eq!(how, How::Executed);
    }
    // Guards nested in a transactional body, on the handle's store.
    let nested = {
        let idem = Arc::clone(&idem);
        idem.guard("outer", &[&"o-1"])
            .in_tx(&mut tx)
            .run(|_tx, _fence| {
                let idem = Arc::clone(&idem);
                Box::pin(async move {
                    let mut hows = Vec::new();
                    for i in 0..8 {
                        let r = idem
                            .guard("nested", &[&i])
                            .run(|| async move { Ok::<_, AppError>(i) })
                            .await;
                        hows.push(r.map(|o| o.how()));
                    }
                    Ok::<_, AppError>(hows.iter().filter(|h| h.is_ok()).count())
                })
            })
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", D::NAME))
            .into_inner()
    };
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..50 {
        let (idem, barrier) = (Arc::clone(&idem), Arc::clone(&barrier));
        tasks.spawn(async move {
            barrier.wait().await;
            idem.guard("unrelated", &[&i])
                .run(|| async move { Ok::<_, AppError>(i) })
                .await
                .map(|o| o.how())
        });
    }
    let hold = tokio::time::sleep(Duration::from_secs(3));
    let (results, ()) = tokio::join!(tasks.join_all(), hold);
    tx.commit().await.unwrap();
    let failed: Vec<String> = results
        .iter()
        .filter_map(|r| r.as_ref().err().map(|e| e.to_string()))
        .collect();
    let executed = results
        .iter()
        .filter(|r| matches!(r, Ok(How::Executed)))
        .count();
    eprintln!(
        "tx_guard_locks {}: {HELD} claims held 3 s in a transaction; 50 unrelated claims -> executed {executed}, failed {} {:?}; nested guards ok {nested}/8",
        D::NAME,
        failed.len(),
        failed.first()
    );
    assert_eq!(nested, 8, "{}: nested guards", D::NAME);
    assert!(failed.is_empty(), "{}: {failed:?}", D::NAME);
    assert_eq!(executed, 50, "{}", D::NAME);
}

mod claims_held_in_a_transaction_block_no_unrelated_key {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::held_claims_block_nothing::<sqlx::PgPool>().await;
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mariadb() {
        super::held_claims_block_nothing::<sqlx::MySqlPool>().await;
    }
}
