//! Claims that got no answer, in virtual time: whatever stopped the reply, the
//! claim may have applied, and it must not block its key for a whole lease once
//! the store answers again (issue 18).

use std::sync::Arc;
use std::time::Duration;

use idem::{Concurrency, Error, FaultyStore, How, Idem, MemoryStore, Store};

use crate::support::{AppError, Counter};

/// Found by the real-time SQLite simulation under load (issue 18, seed 3): a
/// claim applied after its caller's operation timeout; that failure was the one
/// that opened the breaker, and the guard skipped the background release "because
/// the store is deemed down". The orphan held the key for a whole lease after the
/// store had recovered, and the next caller got `InProgress`. A claim that was
/// sent is released whatever the breaker says (only a claim the breaker refused,
/// which sent nothing, has nothing to release).
#[tokio::test(start_paused = true)]
async fn claim_whose_failure_opened_the_breaker_is_released() {
    let faulty = Arc::new(FaultyStore::new(MemoryStore::new()));
    let op_timeout = Duration::from_millis(500);
    let cooldown = Duration::from_secs(1);
    let lease = Duration::from_secs(30);
    let idem = Idem::builder()
        .shared_store(Arc::clone(&faulty) as Arc<dyn Store>)
        .namespace("orphan")
        .op_timeout(op_timeout)
        // One failure opens the breaker: the failure of the claim below.
        .circuit_breaker(1, cooldown)
        .build()
        .unwrap();
    let runs = Counter::default();
    let call = || {
        let runs = runs.clone();
        idem.guard("orphan", &[&"k"])
            .lease(lease)
            .concurrent(Concurrency::Reject)
            .run(move || async move { Ok::<_, AppError>(runs.hit()) })
    };

    // The claim applies at once; its reply comes long after the operation timeout.
    faulty.set_reply_delay(Some(lease));
    let first = call().await;
    assert!(
        matches!(first, Err(AppError::Idem(Error::StoreUnavailable { .. }))),
        "{first:?}"
    );
    faulty.set_reply_delay(None);
    assert_eq!(runs.get(), 0);

    // The store answers again; once the breaker lets calls through, the key is free:
    // the orphaned claim was released, not left to its 30 s lease.
    tokio::time::sleep(cooldown + op_timeout).await;
    let key = idem.key("orphan", &[&"k"]);
    assert_eq!(
        idem.inspect(&key).await.unwrap(),
        None,
        "the unanswered claim still holds the key"
    );
    let second = call().await.unwrap();
    assert_eq!((second.how(), *second.value()), (How::Executed, 1));
    assert_eq!(runs.get(), 1);
}

/// The background release of an unanswered claim is itself a store operation,
/// and on a loaded store it can fail too (issue 18: at load 16 the burst of
/// `many_keys_concurrent` waited out whole 30 s leases of claims whose one
/// release attempt had timed out). It retries, as the operations on a held claim
/// do, so a blip at the wrong moment does not leave the key blocked for a lease.
#[tokio::test(start_paused = true)]
async fn background_release_outlasts_a_blip() {
    let faulty = Arc::new(FaultyStore::new(MemoryStore::new()));
    let op_timeout = Duration::from_millis(500);
    let lease = Duration::from_secs(30);
    let idem = Idem::builder()
        .shared_store(Arc::clone(&faulty) as Arc<dyn Store>)
        .namespace("orphan")
        .op_timeout(op_timeout)
        .build()
        .unwrap();
    let call = || {
        idem.guard("blip", &[&"k"])
            .lease(lease)
            .concurrent(Concurrency::Reject)
            .run(|| async { Ok::<_, AppError>(1) })
    };
    // The claim applies, its reply comes after the timeout; the release sent when
    // the call ends meets a store that is down for 100 ms.
    faulty.set_reply_delay(Some(lease));
    let first = call().await;
    assert!(
        matches!(first, Err(AppError::Idem(Error::StoreUnavailable { .. }))),
        "{first:?}"
    );
    faulty.set_reply_delay(None);
    faulty.set_unavailable(true);
    tokio::time::sleep(Duration::from_millis(100)).await;
    faulty.set_unavailable(false);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let key = idem.key("blip", &[&"k"]);
    assert_eq!(
        idem.inspect(&key).await.unwrap(),
        None,
        "one failed release attempt left the claim to its 30 s lease"
    );
    let second = call().await.unwrap();
    assert_eq!(second.how(), How::Executed);
}

/// Found by the real-time SQLite simulation under load (issue 18, seed 15 of the
/// reproduction at load 11): a claim applied long after its caller's operation
/// timeout (SQL claims run detached, so a caller giving up does not stop them),
/// and the background release meant to undo it queued behind the same backlog
/// (SQLite's single writer turn). Each release attempt was dropped at the
/// operation timeout, which took it out of the queue before it applied, and the
/// retries stopped once the breaker had opened: the orphan held the key for its
/// whole lease although the store was only slow. A finish nobody waits for now
/// keeps its place in line for as long as the claim can matter (its lease).
#[tokio::test(start_paused = true)]
async fn background_release_waits_in_a_slow_stores_queue() {
    let faulty = Arc::new(FaultyStore::new(MemoryStore::new()));
    let op_timeout = Duration::from_millis(500);
    let lease = Duration::from_secs(30);
    // The store is slow for this long after the claim: four operation timeouts,
    // well within the lease.
    let backlog = op_timeout * 4;
    let idem = Idem::builder()
        .shared_store(Arc::clone(&faulty) as Arc<dyn Store>)
        .namespace("orphan")
        .op_timeout(op_timeout)
        .circuit_breaker(1, Duration::from_secs(1))
        .build()
        .unwrap();
    let runs = Counter::default();
    let call = || {
        let runs = runs.clone();
        idem.guard("queued", &[&"k"])
            .lease(lease)
            .concurrent(Concurrency::Reject)
            .run(move || async move { Ok::<_, AppError>(runs.hit()) })
    };
    faulty.set_reply_delay(Some(lease));
    let first = call().await;
    assert!(
        matches!(first, Err(AppError::Idem(Error::StoreUnavailable { .. }))),
        "{first:?}"
    );
    // No await since the call ended: the background release has not started yet,
    // and it meets a store where every operation waits `backlog` before applying.
    faulty.set_reply_delay(None);
    faulty.set_delay(Some(backlog));
    // Two turns of the backlog: the undo re-sends the claim (to queue behind
    // it), then releases it (issue 24: never re-taking a key already seen free).
    tokio::time::sleep(backlog * 2 + op_timeout * 2).await;
    faulty.set_delay(None);
    let key = idem.key("queued", &[&"k"]);
    assert_eq!(
        idem.inspect(&key).await.unwrap(),
        None,
        "the release gave up its place in the slow store's queue; the orphan holds the key for 30 s"
    );
    let second = call().await.unwrap();
    assert_eq!((second.how(), *second.value()), (How::Executed, 1));
    assert_eq!(runs.get(), 1);
}
