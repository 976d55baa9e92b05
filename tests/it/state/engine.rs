//! The state check-and-set after a lost reply (issue 24, f): the caller whose
//! attempt applied is told `Applied`; `AlreadyApplied` is for another caller.
//! On memory, Redis and Redis Cluster (the stores that offer it).

use std::sync::Arc;
use std::time::Duration;

use idem::store::Store;
use idem::{FaultyStore, Idem, StateCas};

use crate::support::handle;

fn faulty_handle(store: Arc<dyn Store>, prefix: &str) -> (Arc<FaultyStore<Arc<dyn Store>>>, Idem) {
    let faulty = Arc::new(FaultyStore::new(store));
    let idem = handle(Arc::clone(&faulty) as Arc<dyn Store>, prefix);
    (faulty, idem)
}

/// Defect f: the only caller's check-and-set applied but its reply was lost; the
/// same call's retry must say `Applied` (its own attempt), not `AlreadyApplied`
/// (which tells a caller another request did the work). A later, separate call
/// is `AlreadyApplied`.
pub async fn state_cas_retry_after_lost_reply_is_applied(store: Arc<dyn Store>) {
    let (faulty, idem) = faulty_handle(store, "eng-cas");
    let ttl = Duration::from_secs(60);
    let order = idem.state_cas("state:order", &[&"L-1"]);
    assert_eq!(
        order.apply(None, "WAIT_PAY", ttl).await.unwrap(),
        StateCas::Applied
    );
    faulty.lose_next_replies(1);
    let mine = order.apply(Some("WAIT_PAY"), "PAID", ttl).await.unwrap();
    assert_eq!(faulty.counts().lost_replies, 1, "the reply was lost");
    assert_eq!(mine, StateCas::Applied, "the caller whose attempt applied");
    assert_eq!(
        order.apply(Some("WAIT_PAY"), "PAID", ttl).await.unwrap(),
        StateCas::AlreadyApplied,
        "another call"
    );
    assert_eq!(order.current().await.unwrap().as_deref(), Some("PAID"));
}

macro_rules! suite {
    ($store:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn state_cas_retry_after_lost_reply_is_applied() {
            crate::state::engine::state_cas_retry_after_lost_reply_is_applied($store).await;
        }
    };
}

mod memory {
    suite!(std::sync::Arc::new(idem::MemoryStore::new()));
}

#[cfg(feature = "redis")]
mod redis {
    suite!(crate::support::stores::redis().await);
}

#[cfg(feature = "redis")]
mod redis_cluster {
    suite!(crate::support::stores::redis_cluster().await);
}
