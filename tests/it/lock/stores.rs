//! The distributed lock (`Idem::lock`, `#[idem::distributed_lock]`) on every
//! store family: mutual exclusion over ≥ 1,000 acquisitions, owner-checked
//! release, renewal past the lease, release of a dropped holder, `LockBusy`.
//! The fenced-write interleaving and the FLUSHALL fence test are in
//! `lock_fenced.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use idem::store::{Owned, Owner, Store};
use idem::{Error, Fence, Idem};

use crate::support::{AppError, handle};

const LEASE: Duration = Duration::from_secs(2);

/// 50 contenders × 20 acquisitions each, half of them fenced (`run`) and
/// half not (`run_unfenced`, the store's cheapest claim): the body's occupancy
/// counter never exceeds 1 whichever kind holds the key, every fenced
/// acquisition got a fence no other had, and fences grow in the order the lock
/// was held, across the unfenced acquisitions in between.
pub async fn no_overlap(store: Arc<dyn Store>) {
    let idem = Arc::new(handle(store, "lock-overlap"));
    let inside = Arc::new(AtomicUsize::new(0));
    let max_inside = Arc::new(AtomicUsize::new(0));
    let fences = Arc::new(std::sync::Mutex::new(Vec::new()));
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = Vec::new();
    for t in 0..50 {
        let (idem, inside, max_inside, fences, barrier) = (
            idem.clone(),
            inside.clone(),
            max_inside.clone(),
            fences.clone(),
            barrier.clone(),
        );
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let (inside, max_inside, fences) = (&inside, &max_inside, &fences);
            let occupy = |fence: Option<Fence>| async move {
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                max_inside.fetch_max(now, Ordering::SeqCst);
                if let Some(f) = fence {
                    fences.lock().unwrap().push(f);
                }
                tokio::task::yield_now().await;
                inside.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, Error>(())
            };
            for _ in 0..20 {
                // A lease sized for a loaded machine: a holder descheduled
                // past a 2 s lease would (as documented) lose it to the next
                // contender, and this test asserts mutual exclusion in time.
                let lock = idem
                    .lock("lock:overlap", &[&"shared"])
                    .lease(Duration::from_secs(15))
                    .wait(Duration::from_secs(60));
                let r = if t % 2 == 0 {
                    lock.run(|grant| occupy(Some(grant.fence()))).await
                } else {
                    lock.run_unfenced(|_| occupy(None)).await
                };
                r.expect("every contender gets the lock within its wait");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(
        max_inside.load(Ordering::SeqCst),
        1,
        "two holders overlapped"
    );
    let fences = fences.lock().unwrap().clone();
    assert_eq!(fences.len(), 500);
    assert!(
        fences.windows(2).all(|w| w[0] < w[1]),
        "fences must grow in acquisition order"
    );
    let s = idem.stats();
    assert_eq!(s.count("executed"), 1000);
}

/// A release by another owner changes nothing: the holder keeps the lock and a
/// contender is still refused.
pub async fn foreign_release_is_a_no_op(store: Arc<dyn Store>) {
    let idem = handle(store.clone(), "lock-foreign");
    let key = idem.key("lock:foreign", &[&1u8]);
    let k = key.as_str().to_owned();
    let (idem_ref, store_ref, key_ref) = (&idem, &store, &key);
    let r = idem
        .lock_key(key.clone())
        .lease(LEASE)
        .run(|grant| async move {
            let stranger = store_ref.release(&k, Owner::fresh()).await.unwrap();
            let busy = idem_ref
                .lock_key(key_ref.clone())
                .wait(Duration::ZERO)
                .run(|_| async { Ok::<_, Error>(()) })
                .await;
            Ok::<_, Error>((stranger, busy, grant.is_valid()))
        })
        .await
        .unwrap();
    assert_eq!(r.0, Owned::NotOwner);
    assert!(matches!(r.1, Err(Error::LockBusy { .. })), "{:?}", r.1);
    assert!(r.2);
    // Released by its owner: free again at once.
    idem.lock_key(key)
        .wait(Duration::ZERO)
        .run(|_| async { Ok::<_, Error>(()) })
        .await
        .expect("released");
    assert_eq!(idem.stats().count("lock_busy"), 1);
}

/// A body running 2.5 leases keeps the lock (the watchdog renews it); a
/// contender tried at 1.5 and 2.2 leases is refused, and the grant is valid
/// throughout.
pub async fn renewal_keeps_the_lock(store: Arc<dyn Store>) {
    let idem = handle(store, "lock-renew");
    let lease = Duration::from_secs(1);
    let idem_ref = &idem;
    let held = idem
        .lock("lock:renew", &[&"k"])
        .lease(lease)
        .run(|grant| async move {
            let mut refused = 0;
            for at in [1500u64, 700] {
                tokio::time::sleep(Duration::from_millis(at)).await;
                let r = idem_ref
                    .lock("lock:renew", &[&"k"])
                    .lease(lease)
                    .wait(Duration::ZERO)
                    .run(|_| async { Ok::<_, Error>(()) })
                    .await;
                if matches!(r, Err(Error::LockBusy { .. })) {
                    refused += 1;
                }
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok::<_, Error>((refused, grant.is_valid()))
        })
        .await
        .unwrap();
    assert_eq!(held, (2, true));
}

/// A holder whose future is dropped mid-body stops renewing and gives the lock
/// up: a contender gets it within one lease (plus 1 s slack).
pub async fn dropped_holder_frees_the_lock(store: Arc<dyn Store>) {
    // The holder's store is wrapped only to count its operations.
    let counted = Arc::new(idem::FaultyStore::new(store));
    let idem = Arc::new(handle(counted.clone(), "lock-drop"));
    let lease = Duration::from_secs(2);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let holder = {
        let idem = idem.clone();
        tokio::spawn(async move {
            idem.lock("lock:drop", &[&"k"])
                .lease(lease)
                .run(|_| async move {
                    let _ = tx.send(());
                    std::future::pending::<()>().await;
                    Ok::<_, Error>(())
                })
                .await
        })
    };
    rx.await.unwrap();
    holder.abort();
    let t0 = Instant::now();
    idem.lock("lock:drop", &[&"k"])
        .lease(lease)
        .wait(lease + Duration::from_secs(1))
        .run(|_| async { Ok::<_, Error>(()) })
        .await
        .expect("the dropped holder's lock frees");
    assert!(t0.elapsed() < lease + Duration::from_secs(1));
    // No renewal after the drop: the watchdog went with the future (it would
    // renew every 667 ms).
    let ops = counted.counts().ops;
    tokio::time::sleep(lease).await;
    assert_eq!(counted.counts().ops, ops, "renewals went on after the drop");
}

/// `max_hold` bounds renewal: a hung body (lease 1 s, max_hold 1.5 s) loses the
/// lock after its last renewal's lease, a contender takes it over, and the hung
/// holder's grant reports it.
pub async fn max_hold_stops_renewal(store: Arc<dyn Store>) {
    let idem = Arc::new(handle(store, "lock-maxhold"));
    let lease = Duration::from_secs(1);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let hung = {
        let idem = idem.clone();
        tokio::spawn(async move {
            idem.lock("lock:maxhold", &[&"k"])
                .lease(lease)
                .max_hold(Duration::from_millis(1500))
                .run(|grant| async move {
                    let _ = tx.send(());
                    tokio::time::sleep(Duration::from_secs(4)).await;
                    Ok::<_, Error>(grant.is_valid())
                })
                .await
        })
    };
    rx.await.unwrap();
    let t0 = Instant::now();
    let other = idem
        .lock("lock:maxhold", &[&"k"])
        .lease(lease)
        .wait(Duration::from_secs(4))
        .run(|grant| async move { Ok::<_, Error>(grant.fence()) })
        .await
        .expect("taken over once renewal stopped");
    // Renewal stops before `max_hold` would be passed by one more lease: the lock
    // lapses 1 to 2 leases after the claim (plus 1 s slack).
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert!(other.is_valid());
    assert!(
        !hung.await.unwrap().unwrap(),
        "the hung holder's grant must be invalid"
    );
}

// ---- #[idem::distributed_lock] ----

#[idem::distributed_lock(key = "lock:macro:<account>", lease = "1s", wait = "10s", max_hold = "30s", handle = idem)]
async fn deduct(
    idem: &Idem,
    account: u32,
    fence: Fence,
    inside: &AtomicUsize,
) -> Result<Fence, AppError> {
    if inside.fetch_add(1, Ordering::SeqCst) != 0 {
        return Err(AppError::Business("overlap".into()));
    }
    tokio::time::sleep(Duration::from_millis(2)).await;
    inside.fetch_sub(1, Ordering::SeqCst);
    Ok(fence)
}

#[idem::distributed_lock(key = "lock:macro-busy:<account>", lease = "1s", wait = "100ms", handle = idem)]
async fn try_hold(idem: &Idem, account: u32, hold: Duration) -> Result<(), AppError> {
    tokio::time::sleep(hold).await;
    Ok(())
}

/// The macro: 20 concurrent calls never overlap and each gets a distinct fence;
/// a call finding the lock busy past `wait` gets `LockBusy`.
pub async fn macro_lock(store: Arc<dyn Store>) {
    let idem = Arc::new(handle(store, "lock-macro"));
    let inside = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (idem, inside) = (idem.clone(), inside.clone());
        tasks.push(tokio::spawn(async move {
            deduct(&idem, 7, Fence::NONE, &inside).await
        }));
    }
    let mut fences = Vec::new();
    for t in tasks {
        let f = t.await.unwrap().expect("no overlap, no busy");
        assert!(f.is_valid());
        fences.push(f);
    }
    fences.sort();
    fences.dedup();
    assert_eq!(fences.len(), 20);

    let holder = {
        let idem = idem.clone();
        tokio::spawn(async move { try_hold(&idem, 1, Duration::from_millis(1500)).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let busy = try_hold(&idem, 1, Duration::ZERO).await;
    assert!(
        matches!(busy, Err(AppError::Idem(Error::LockBusy { .. }))),
        "{busy:?}"
    );
    holder.await.unwrap().unwrap();
    try_hold(&idem, 1, Duration::ZERO).await.unwrap();
}

macro_rules! lock_suite {
    (store = $store:expr, keys = $keys:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn no_overlap() {
            crate::lock::stores::no_overlap($store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn foreign_release_is_a_no_op() {
            crate::lock::stores::foreign_release_is_a_no_op($store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn renewal_keeps_the_lock() {
            crate::lock::stores::renewal_keeps_the_lock($store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn dropped_holder_frees_the_lock() {
            crate::lock::stores::dropped_holder_frees_the_lock($store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn max_hold_stops_renewal() {
            crate::lock::stores::max_hold_stops_renewal($store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn macro_lock() {
            crate::lock::stores::macro_lock($store).await;
        }
    };
}
pub(crate) use lock_suite;

crate::support::stores::for_each_store!(crate::lock::stores::lock_suite);
