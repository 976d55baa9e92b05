//! Regression tests for the guard defects of issue 10 (§A1, A2, A5, A6 and the
//! "Also" items), in virtual time on the memory store behind `FaultyStore`, so the
//! timing is exact and a loaded machine cannot change the outcome.

use std::sync::Arc;
use std::time::Duration;

use idem::{Concurrency, Error, FaultyStore, Hooks, Idem, MemoryStore};

use crate::support::Counter;

fn handle_on(store: Arc<FaultyStore<MemoryStore>>, op_timeout: Duration) -> Idem {
    Idem::builder()
        .shared_store(store)
        .namespace("safety")
        .op_timeout(op_timeout)
        .circuit_breaker(1000, Duration::from_secs(1))
        .build()
        .expect("valid handle")
}

const MS: fn(u64) -> Duration = Duration::from_millis;

/// §A1: a claim applied at t=0 whose reply arrives at 700 ms (op timeout 800 ms,
/// lease 1 s) used to renew first at ≈1.03 s, so a duplicate at 1.01 s claimed the
/// lapsed key and ran beside the first body. A call's operations now get at most a
/// third of its lease (the op timeout is clamped to 333 ms here), so such a reply
/// counts as no answer: the claim is released, the caller fails closed, and no
/// two bodies ever run at once.
#[tokio::test(start_paused = true)]
async fn a_slow_claim_reply_never_lets_a_duplicate_run() {
    let store = Arc::new(FaultyStore::new(MemoryStore::new()));
    let idem = handle_on(store.clone(), MS(800));
    store.set_reply_delay(Some(MS(700)));
    let runs = Counter::default();
    let running = Counter::default();
    let overlap = Counter::default();
    let call = || {
        idem.guard("slow-reply", &[&1u8])
            .lease(Duration::from_secs(1))
            .concurrent(Concurrency::Reject)
            .run(|| async {
                runs.hit();
                if running.hit() > 1 {
                    overlap.hit();
                }
                tokio::time::sleep(Duration::from_secs(3)).await;
                running.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                Ok::<_, Error>(1u8)
            })
    };
    let (first, second) = tokio::join!(call(), async {
        tokio::time::sleep(MS(1010)).await;
        call().await
    });
    assert_eq!(
        overlap.get(),
        0,
        "two bodies ran at once: {first:?} {second:?}"
    );
    assert!(runs.get() <= 1, "{first:?} {second:?}");
    for r in [first, second] {
        assert!(
            matches!(&r, Err(Error::StoreUnavailable { reason, .. }) if reason.contains("333")),
            "a reply slower than a third of the lease is no answer: {r:?}"
        );
    }
}

/// §A1 with a lease renewal can keep up with (3 × op timeout): replies that take
/// almost the whole op timeout, a body that outlives several leases, and a
/// duplicate every 100 ms: exactly one body runs.
#[tokio::test(start_paused = true)]
async fn slow_replies_with_a_valid_lease_run_the_body_once() {
    let store = Arc::new(FaultyStore::new(MemoryStore::new()));
    let idem = handle_on(store.clone(), MS(800));
    store.set_reply_delay(Some(MS(790)));
    let runs = Counter::default();
    let call = |idem: Idem, runs: Counter| async move {
        idem.guard("slow-reply-ok", &[&1u8])
            .lease(MS(2400))
            .concurrent(Concurrency::Reject)
            .run(|| async {
                runs.hit();
                tokio::time::sleep(Duration::from_secs(8)).await;
                Ok::<_, Error>(1u8)
            })
            .await
    };
    let mut dups = tokio::task::JoinSet::new();
    for i in 1..=80u64 {
        let (idem, runs) = (idem.clone(), runs.clone());
        dups.spawn(async move {
            tokio::time::sleep(MS(100 * i)).await;
            call(idem, runs).await
        });
    }
    let first = call(idem.clone(), runs.clone()).await;
    assert_eq!(first.unwrap().into_inner(), 1);
    let mut rejected = 0;
    while let Some(r) = dups.join_next().await {
        match r.expect("task") {
            Err(Error::InProgress { .. }) => rejected += 1,
            Ok(o) => assert!(o.is_replay(), "a duplicate ran the body"),
            Err(e) => panic!("duplicate: {e}"),
        }
    }
    assert_eq!(runs.get(), 1);
    assert!(rejected > 60, "duplicates overlapped the body: {rejected}");
}

/// §A2: the body returned `Ok`, `complete` is in flight, and the caller is
/// dropped (a client timeout): the result must still be stored, so the retry
/// replays it instead of running the body again after the lease lapses.
#[tokio::test(start_paused = true)]
async fn a_caller_dropped_during_complete_still_stores_the_result() {
    let store = Arc::new(FaultyStore::new(MemoryStore::new()));
    let idem = handle_on(store.clone(), Duration::from_secs(1));
    let runs = Counter::default();
    let call = || {
        let store = store.clone();
        let runs = runs.clone();
        idem.guard("drop-complete", &[&1u8])
            .lease(Duration::from_secs(3))
            .run(move || async move {
                runs.hit();
                // The store turns slow as the body finishes: `complete` is in flight.
                store.set_delay(Some(MS(500)));
                Ok::<_, Error>(42u32)
            })
    };
    assert!(
        tokio::time::timeout(MS(100), call()).await.is_err(),
        "the caller gives up while complete is in flight"
    );
    store.set_delay(None);
    let out = call().await.expect("retry");
    assert_eq!(out.into_inner(), 42);
    assert!(out_is_replay(&idem, "drop-complete").await);
    assert_eq!(runs.get(), 1, "the retry ran the body again");
}

async fn out_is_replay(idem: &Idem, scene: &str) -> bool {
    let key = idem.key(scene, &[&1u8]);
    matches!(
        idem.inspect(&key).await,
        Ok(Some(idem::store::RecordState::Done { .. }))
    )
}

/// §A2, the error side: the body failed, `release` is in flight, and the caller is
/// dropped. The release still happens, so a retry runs at once instead of finding
/// the key claimed for the rest of the lease.
#[tokio::test(start_paused = true)]
async fn a_caller_dropped_during_release_still_releases() {
    let store = Arc::new(FaultyStore::new(MemoryStore::new()));
    let idem = handle_on(store.clone(), Duration::from_secs(1));
    let runs = Counter::default();
    let call = |fail: bool| {
        let store = store.clone();
        let runs = runs.clone();
        idem.guard("drop-release", &[&1u8])
            .lease(Duration::from_secs(30))
            .concurrent(Concurrency::Reject)
            .run(move || async move {
                runs.hit();
                if fail {
                    store.set_delay(Some(MS(500)));
                    return Err(Error::NotFound { key: "x".into() });
                }
                Ok::<_, Error>(7u8)
            })
    };
    assert!(tokio::time::timeout(MS(100), call(true)).await.is_err());
    store.set_delay(None);
    tokio::time::sleep(MS(10)).await;
    let out = call(false)
        .await
        .expect("the retry runs: the claim was released");
    assert_eq!(out.into_inner(), 7);
    assert_eq!(runs.get(), 2);
}

/// §A5: under `degrade = "backstop"`, a claim whose replies were lost may have
/// applied. Its body runs degraded; afterwards the claim must not be released, or
/// a duplicate runs the body again and only the unique index saves it. Since
/// issue 19 the degraded call completes that claim (owner-checked) with its value
/// once the body has ended, so the duplicate replays it.
#[tokio::test(start_paused = true)]
async fn the_degraded_path_keeps_a_claim_that_may_have_applied() {
    let store = Arc::new(FaultyStore::new(MemoryStore::new()));
    let idem = handle_on(store.clone(), Duration::from_secs(1));
    let runs = Counter::default();
    let call = || {
        idem.guard("degraded-claim", &[&1u8])
            .lease(Duration::from_secs(30))
            .concurrent(Concurrency::Reject)
            .backstop("uk_degraded")
            .degrade_to_backstop()
            .run_with(Hooks::new().detect(idem::std_error), || async {
                runs.hit();
                Ok::<_, Error>(1u8)
            })
    };
    // Every attempt of the claim applies, then loses its reply.
    store.lose_next_replies(3);
    let first = call().await.expect("degraded run");
    assert_eq!(first.how(), idem::How::Degraded);
    tokio::time::sleep(MS(50)).await;
    let second = call().await;
    assert!(
        matches!(&second, Ok(o) if o.how() == idem::How::Replayed && *o.value() == 1),
        "the applied claim was released, or left unfinished: {second:?}"
    );
    assert_eq!(runs.get(), 1);
}

/// §A6: durations that overflow an `Instant` or a store's millisecond field are a
/// typed configuration error, never a panic, and nothing is left claimed.
#[tokio::test(start_paused = true)]
async fn huge_durations_are_config_errors() {
    let store = Arc::new(FaultyStore::new(MemoryStore::new()));
    let idem = handle_on(store.clone(), Duration::from_secs(1));
    let runs = Counter::default();
    let body = || async {
        runs.hit();
        Ok::<_, Error>(1u8)
    };
    let g = || idem.guard("huge", &[&1u8]);
    let calls = [
        g().ttl(Duration::MAX).run(body).await,
        g().lease(Duration::MAX).run(body).await,
        g().max_hold(Duration::MAX).run(body).await,
        g().wait(Duration::MAX).run(body).await,
        g().ttl(Duration::from_secs(u64::MAX / 1000))
            .run(body)
            .await,
    ];
    for r in calls {
        assert!(matches!(r, Err(Error::Config(_))), "{r:?}");
    }
    assert_eq!(runs.get(), 0);
    for b in [
        Idem::builder()
            .store(MemoryStore::new())
            .op_timeout(Duration::MAX)
            .build(),
        Idem::builder()
            .store(MemoryStore::new())
            .circuit_breaker(3, Duration::MAX)
            .build(),
    ] {
        assert!(matches!(b, Err(Error::Config(_))), "{b:?}");
    }
    // The key is free: a sane call runs.
    assert_eq!(g().run(body).await.unwrap().into_inner(), 1);
    assert_eq!(runs.get(), 1);
}

/// §A6 at the store level: a store called directly with a huge ttl or lease does
/// not panic.
#[tokio::test(start_paused = true)]
async fn the_memory_store_takes_huge_durations_without_panicking() {
    use idem::Store;
    use idem::store::{Claim, ClaimRequest, Owner};
    let store = MemoryStore::new();
    let owner = Owner::fresh();
    let req = ClaimRequest {
        key: "huge-store",
        owner,
        fingerprint: idem::fingerprint::Fingerprint::NONE,
        lease: Duration::MAX,
    };
    assert!(matches!(
        store.claim(req).await,
        Ok(Claim::Claimed { .. }) | Err(_)
    ));
    let _ = store.renew("huge-store", owner, Duration::MAX).await;
    let _ = store
        .complete("huge-store", owner, b"x", Duration::MAX)
        .await;
}

/// "Also": a stale owner whose `complete` was rejected (its lease lapsed past
/// `max_hold` and another caller took the key) used to return `How::Executed`
/// like any first call, while every replay returns the other caller's value. The
/// caller can now see that its result was not stored, and the call is counted as
/// `not_stored`.
#[tokio::test(start_paused = true)]
async fn a_result_the_store_rejected_is_reported_as_not_stored() {
    let store = Arc::new(FaultyStore::new(MemoryStore::new()));
    let idem = handle_on(store, Duration::from_secs(1));
    let call = |v: u8, hang: Duration| {
        idem.guard("not-stored", &[&1u8])
            .lease(Duration::from_secs(3))
            .max_hold(Duration::from_secs(3))
            .concurrent(Concurrency::Reject)
            .run(move || async move {
                tokio::time::sleep(hang).await;
                Ok::<_, Error>(v)
            })
    };
    let (stale, taker) = tokio::join!(call(1, Duration::from_secs(10)), async {
        tokio::time::sleep(Duration::from_secs(4)).await;
        call(2, MS(10)).await
    });
    let (stale, taker) = (stale.unwrap(), taker.unwrap());
    assert_eq!(
        (taker.how(), taker.is_stored()),
        (idem::How::Executed, true)
    );
    assert_eq!(
        *stale.value(),
        1,
        "the stale caller still gets its own value"
    );
    assert!(!stale.is_stored(), "the store rejected the stale complete");
    let replay = call(3, MS(10)).await.unwrap();
    assert_eq!((*replay.value(), replay.is_replay()), (2, true));
    assert_eq!(idem.stats().count("not_stored"), 1);
    assert_eq!(idem.stats().count("executed"), 1);
}

/// "Also": `guard(..).backstop("uk").run(body)` could never detect a violation
/// (detection lived only on `Hooks`), so the backstop silently did nothing. A
/// backstop the call cannot detect is refused before anything runs.
#[tokio::test]
async fn a_backstop_without_detection_is_refused() {
    let store = Arc::new(FaultyStore::new(MemoryStore::new()));
    let idem = handle_on(store, Duration::from_secs(1));
    let runs = Counter::default();
    let r = idem
        .guard("undetectable", &[&1u8])
        .backstop("uk_orders")
        .run(|| async {
            runs.hit();
            Ok::<_, Error>(1u8)
        })
        .await;
    assert!(
        matches!(&r, Err(Error::Config(m)) if m.contains("uk_orders")),
        "{r:?}"
    );
    assert_eq!(runs.get(), 0);
    // With detection it runs.
    let r = idem
        .guard("undetectable", &[&1u8])
        .backstop("uk_orders")
        .run_with(Hooks::new().detect(idem::std_error), || async {
            runs.hit();
            Ok::<_, Error>(1u8)
        })
        .await;
    assert_eq!(r.unwrap().into_inner(), 1);
    assert_eq!(runs.get(), 1);
}
