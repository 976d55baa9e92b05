//! The store contract under the guard: leases taken over after a crash, stale
//! owners without effect, a lost reply retried by the same owner, cancellation
//! before and after the body starts, fences that only rise.

use std::sync::Arc;
use std::time::Duration;

use idem::store::{ClaimRequest, Owned, Owner, RecordState};
use idem::{Concurrency, Error, FaultyStore, How, Store};

use super::suite::{Res, short};
use crate::support::{AppError, Counter, FULL_BUDGET_LEASE, TEST_OP_TIMEOUT};

pub async fn lease_takeover_after_crash(store: Arc<dyn Store>) {
    let idem = short(store.clone(), "lt");
    let key = idem.key("crash", &[&"k"]);
    // A process claims and dies: the claim is left behind with a 1 s lease.
    let dead = Owner::fresh();
    let first = store
        .claim(ClaimRequest {
            key: key.as_str(),
            owner: dead,
            fingerprint: Default::default(),
            lease: Duration::from_secs(1),
        })
        .await
        .unwrap();
    let idem::store::Claim::Claimed { fence: f1 } = first else {
        panic!("fresh key must be claimed: {first:?}")
    };
    // While the lease runs, a reject-mode call sees it in progress.
    let busy = idem
        .guard("crash", &[&"k"])
        .concurrent(Concurrency::Reject)
        .run(|| async { Res::Ok(0) })
        .await;
    assert!(matches!(
        busy,
        Err(AppError::Idem(Error::InProgress { .. }))
    ));
    // A waiting call takes over once the lease lapses, with a larger fence.
    let t0 = std::time::Instant::now();
    let out = idem
        .guard("crash", &[&"k"])
        .wait(Duration::from_secs(5))
        .run_fenced(|fence| async move { Res::Ok(fence.get()) })
        .await
        .unwrap();
    assert_eq!(out.how(), How::Executed);
    assert!(
        out.fence() > f1,
        "takeover fence {:?} must exceed {:?}",
        out.fence(),
        f1
    );
    // The dead claim lapses 1 s after it was made; the waiter's poll in flight
    // then, its own claim and its complete take one operation budget each (the
    // handle's 800 ms, the default 30 s lease does not clamp it); 1 s slack.
    let bound = Duration::from_secs(1) + TEST_OP_TIMEOUT * 3 + Duration::from_secs(1);
    assert!(
        t0.elapsed() < bound,
        "took over within lease + slack: {:?}",
        t0.elapsed()
    );
    // The dead owner, back to life, cannot touch the new record.
    assert_eq!(
        store
            .complete(key.as_str(), dead, b"I1zzzz", Duration::from_secs(60))
            .await
            .unwrap(),
        Owned::NotOwner
    );
    assert_eq!(
        store.release(key.as_str(), dead).await.unwrap(),
        Owned::NotOwner
    );
    assert!(
        idem.guard("crash", &[&"k"])
            .run(|| async { Res::Ok(0u64) })
            .await
            .unwrap()
            .is_replay()
    );
}

pub async fn stale_owner_has_no_effect(store: Arc<dyn Store>) {
    let idem = short(store.clone(), "so");
    let key = idem.key("stale", &[&"k"]);
    let (a, b) = (Owner::fresh(), Owner::fresh());
    let req = |owner| ClaimRequest {
        key: key.as_str(),
        owner,
        fingerprint: Default::default(),
        lease: Duration::from_secs(30),
    };
    assert!(matches!(
        store.claim(req(a)).await.unwrap(),
        idem::store::Claim::Claimed { .. }
    ));
    assert!(store.forget(key.as_str()).await.unwrap());
    let idem::store::Claim::Claimed { fence: fb } = store.claim(req(b)).await.unwrap() else {
        panic!("b claims")
    };
    assert_eq!(
        store
            .renew(key.as_str(), a, Duration::from_secs(30))
            .await
            .unwrap(),
        Owned::NotOwner
    );
    assert_eq!(
        store
            .complete(key.as_str(), a, b"I1xxxxx", Duration::from_secs(30))
            .await
            .unwrap(),
        Owned::NotOwner
    );
    assert_eq!(
        store.release(key.as_str(), a).await.unwrap(),
        Owned::NotOwner
    );
    match store.inspect(key.as_str()).await.unwrap() {
        Some(RecordState::InProgress { owner, fence, .. }) => assert_eq!((owner, fence), (b, fb)),
        other => panic!("b's claim must be intact: {other:?}"),
    }
    // Per-owner idempotence: b's repeated claim, complete and release all answer as the first time.
    assert_eq!(
        store.claim(req(b)).await.unwrap(),
        idem::store::Claim::Claimed { fence: fb }
    );
    assert_eq!(
        store
            .complete(key.as_str(), b, b"I1abcde", Duration::from_secs(30))
            .await
            .unwrap(),
        Owned::Applied
    );
    assert_eq!(
        store
            .complete(key.as_str(), b, b"I1abcde", Duration::from_secs(30))
            .await
            .unwrap(),
        Owned::Applied
    );
    let forgotten = store.forget(key.as_str()).await.unwrap();
    assert!(forgotten);
    let c = Owner::fresh();
    assert!(matches!(
        store.claim(req(c)).await.unwrap(),
        idem::store::Claim::Claimed { .. }
    ));
    assert_eq!(
        store.release(key.as_str(), c).await.unwrap(),
        Owned::Applied
    );
    assert_eq!(
        store.release(key.as_str(), c).await.unwrap(),
        Owned::Applied,
        "a retried release is a no-op"
    );
    store.forget(key.as_str()).await.unwrap();
}

pub async fn lost_reply_same_owner(store: Arc<dyn Store>) {
    let faulty = Arc::new(FaultyStore::new(store));
    let idem = short(faulty.clone(), "lr");
    let runs = Counter::default();
    // The claim applies but its reply is lost; the guard retries as the same owner.
    faulty.lose_next_replies(1);
    let out = idem
        .guard("lost", &[&"k1"])
        .run(|| {
            let runs = runs.clone();
            async move {
                runs.hit();
                Res::Ok(1)
            }
        })
        .await
        .unwrap();
    assert_eq!(out.how(), How::Executed);
    // Now the complete's reply is lost after it applied: retried, still stored.
    let out2 = idem
        .guard("lost", &[&"k2"])
        .run(|| {
            let (runs, faulty) = (runs.clone(), faulty.clone());
            async move {
                runs.hit();
                faulty.lose_next_replies(1);
                Res::Ok(2)
            }
        })
        .await
        .unwrap();
    assert_eq!(out2.how(), How::Executed);
    assert_eq!(faulty.counts().lost_replies, 2);
    for (k, v) in [("k1", 1), ("k2", 2)] {
        let again = idem
            .guard("lost", &[&k])
            .run(|| async { Res::Ok(0) })
            .await
            .unwrap();
        assert_eq!((again.how(), *again.value()), (How::Replayed, v));
    }
    assert_eq!(runs.get(), 2);
}

pub async fn cancel_before_body_releases(store: Arc<dyn Store>) {
    let faulty = Arc::new(FaultyStore::new(store.clone()));
    // An operation budget of 10 s (a third of the 30 s lease), so the call
    // still waits for the claim's reply when the test cancels it.
    let idem = idem::Idem::builder()
        .shared_store(faulty.clone())
        .namespace(crate::support::unique_ns("cb"))
        .op_timeout(Duration::from_secs(10))
        .build()
        .expect("valid handle");
    let runs = Counter::default();
    let key = idem.key("cancel", &[&"k"]);
    // The claim applies at once but its reply takes 5 s. The caller gives up as
    // soon as the claim is in the store (read past the wrapper), so it is
    // cancelled while waiting for that reply however loaded the machine is: a
    // fixed timeout could fire before the claim was even sent, and the key then
    // looked free before the claim applied.
    faulty.set_reply_delay(Some(Duration::from_secs(5)));
    let call = idem.guard("cancel", &[&"k"]).run(|| {
        let runs = runs.clone();
        async move {
            runs.hit();
            Res::Ok(1)
        }
    });
    let applied = async {
        while store.inspect(key.as_str()).await.unwrap().is_none() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let r = tokio::time::timeout(Duration::from_secs(15), async {
        tokio::select! {
            biased;
            () = applied => None,
            out = call => Some(out),
        }
    })
    .await;
    assert!(
        matches!(r, Ok(None)),
        "the claim must apply while its call waits for the reply: {r:?}"
    );
    assert_eq!(runs.get(), 0, "cancelled before the body started");
    faulty.set_reply_delay(None);
    // The dropped call released its claim (in a spawned task, after the late
    // reply): the key frees well before the 30 s lease would lapse (20 s of
    // slack for a loaded machine).
    let mut freed = false;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        if idem.inspect(&key).await.unwrap().is_none() {
            freed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        freed,
        "claim released after cancellation before the body started"
    );
    let out = idem
        .guard("cancel", &[&"k"])
        .concurrent(Concurrency::Reject)
        .run(|| {
            let runs = runs.clone();
            async move {
                runs.hit();
                Res::Ok(2)
            }
        })
        .await
        .unwrap();
    assert_eq!((out.how(), *out.value()), (How::Executed, 2));
    assert_eq!(runs.get(), 1);
}

pub async fn cancel_after_start_keeps_claim(store: Arc<dyn Store>) {
    let idem = short(store, "ca");
    let runs = Counter::default();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let (idem2, runs2) = (idem.clone(), runs.clone());
    let lease = FULL_BUDGET_LEASE;
    let task = tokio::spawn(async move {
        idem2
            .guard("cancel2", &[&"k"])
            .lease(lease)
            .run(|| async move {
                runs2.hit();
                let _ = started_tx.send(());
                tokio::time::sleep(Duration::from_secs(30)).await;
                Res::Ok(1)
            })
            .await
    });
    started_rx.await.unwrap();
    task.abort();
    let _ = task.await;
    // The body may have committed: the claim stays, so a retry cannot run now...
    let busy = idem
        .guard("cancel2", &[&"k"])
        .concurrent(Concurrency::Reject)
        .run(|| async { Res::Ok(9) })
        .await;
    assert!(
        matches!(busy, Err(AppError::Idem(Error::InProgress { .. }))),
        "got {busy:?}"
    );
    // ...and renewal stopped with the future, so the lease lapses and a retry runs:
    // at most a lease after the last renewal was sent, plus the waiter's poll in
    // flight and its own claim (one operation budget each), with 1 s slack.
    let out = idem
        .guard("cancel2", &[&"k"])
        .lease(lease)
        .wait(lease + TEST_OP_TIMEOUT * 2 + Duration::from_secs(1))
        .run(|| {
            let runs = runs.clone();
            async move {
                runs.hit();
                Res::Ok(2)
            }
        })
        .await
        .unwrap();
    assert_eq!(*out.value(), 2);
    assert_eq!(runs.get(), 2);
}

pub async fn fences_increase(store: Arc<dyn Store>) {
    let idem = short(store, "fi");
    let key = idem.key("fence", &[&"k"]);
    // The ttl must exceed the lease, and the lease leaves every operation the
    // handle's whole budget.
    let ttl = FULL_BUDGET_LEASE + Duration::from_millis(100);
    let run = || {
        idem.guard("fence", &[&"k"])
            .lease(FULL_BUDGET_LEASE)
            .ttl(ttl)
            .run_fenced(|f| async move { Res::Ok(f.get()) })
    };
    let f1 = run().await.unwrap().fence();
    assert!(idem.forget(&key).await.unwrap());
    let f2 = run().await.unwrap().fence();
    assert!(f2 > f1, "after forget: {f2:?} > {f1:?}");
    // Past the record's expiry (a lower bound: sleeping longer changes nothing).
    tokio::time::sleep(ttl + Duration::from_millis(200)).await;
    let out = run().await.unwrap();
    assert_eq!(out.how(), How::Executed, "the record expired");
    assert!(out.fence() > f2, "after expiry: {:?} > {f2:?}", out.fence());
}
