//! The state check-and-set on memory, Redis and Redis Cluster: 50 concurrent
//! conflicting transitions apply exactly once; a repeat is `AlreadyApplied`;
//! a wrong state is `InvalidTransition` with the state found.

use std::sync::Arc;
use std::time::Duration;

use idem::StateCas;
use idem::store::Store;

use crate::support::handle;

const TTL: Duration = Duration::from_secs(60);

/// 50 callers behind a barrier each try `WAIT_PAY` → their own target: one
/// applies, the other 49 see another state (the winner's).
pub async fn one_of_fifty(store: Arc<dyn Store>) {
    let idem = Arc::new(handle(store, "state-cas"));
    let order = idem.state_cas("state:order", &[&"A-1"]);
    assert_eq!(
        order.apply(None, "WAIT_PAY", TTL).await.unwrap(),
        StateCas::Applied
    );
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = Vec::new();
    for i in 0..50 {
        let (idem, barrier) = (idem.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let target = format!("CLOSED_BY_{i}");
            let r = idem
                .state_cas("state:order", &[&"A-1"])
                .apply(Some("WAIT_PAY"), &target, TTL)
                .await
                .unwrap();
            (target, r)
        }));
    }
    let mut winners = Vec::new();
    let mut losers = 0;
    for t in tasks {
        match t.await.unwrap() {
            (target, StateCas::Applied) => winners.push(target),
            (_, StateCas::InvalidTransition { current: Some(_) }) => losers += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((winners.len(), losers), (1, 49));
    assert_eq!(
        order.current().await.unwrap().as_deref(),
        Some(&*winners[0])
    );
    // The winner's repeat is already applied; a stale edge is refused.
    assert_eq!(
        order
            .apply(Some("WAIT_PAY"), &winners[0], TTL)
            .await
            .unwrap(),
        StateCas::AlreadyApplied
    );
    assert_eq!(
        idem.state_cas("state:order", &[&"missing"])
            .apply(Some("WAIT_PAY"), "PAID", TTL)
            .await
            .unwrap(),
        StateCas::InvalidTransition { current: None }
    );
    let s = idem.stats();
    assert_eq!(
        (
            s.count("applied"),
            s.count("already_applied"),
            s.count("invalid_transition")
        ),
        (2, 1, 50)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory() {
    one_of_fifty(Arc::new(idem::MemoryStore::new())).await;
}

#[cfg(all(
    feature = "redis",
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite"
))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis() {
    one_of_fifty(crate::support::stores::redis().await).await;
}

#[cfg(all(
    feature = "redis",
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite"
))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster() {
    one_of_fifty(crate::support::stores::redis_cluster().await).await;
}
