//! The guard semantics (DESIGN §3, rules 1–9), written once and run on every store.
//!
//! A store module invokes `conformance_suite!(<async expr giving Arc<dyn Store>>, keys = N)`
//! and gets one `#[tokio::test]` per rule. Each test makes its own handle under a
//! fresh namespace, so shared servers need no cleanup between runs, and asserts
//! what happened: body executions, returned values, stored records, fences.

use std::sync::Arc;
use std::time::Duration;

use idem::store::{ClaimRequest, Owned, Owner, RecordState};
use idem::{Concurrency, Error, FaultyStore, Fence, Hooks, How, Store, Terminal};
use tokio::sync::Barrier;

use crate::support::{
    AppError, Counter, FULL_BUDGET_LEASE, TEST_OP_TIMEOUT, handle, order_rows, sqlite_business_db,
};

/// Generates one test per rule for the store built by `$make` (an expression
/// that may `.await`). `keys` sizes the many-keys concurrency test.
macro_rules! conformance_suite {
    ($make:expr, keys = $keys:expr) => {
        async fn __store() -> std::sync::Arc<dyn idem::Store> {
            $make
        }
        conformance_suite!(@tests $keys;
            first_call_runs_and_stores, sequential_repeats_run_once, concurrent_wait_runs_once,
            concurrent_reject, fail_then_retry, waiter_takes_over_after_failure, payload_mismatch,
            lease_takeover_after_crash, stale_owner_has_no_effect, lost_reply_same_owner,
            cancel_before_body_releases, cancel_after_start_keeps_claim, fences_increase,
            unavailable_fails_closed, degraded_backstop_one_row, backstop_on_conflict_replays,
            backstop_without_lookup_is_duplicate, terminal_error_replayed, version_mismatch_is_codec,
            hostile_key_parts, breaker_stops_paying_timeouts, complete_failure_still_returns_ok,
            inspect_and_forget, max_hold_lets_hung_body_lapse, failed_claim_is_released,
            hung_claim_is_released, huge_durations_are_capped, census_counts_by_scene_and_state,
            purge_report_counts_then_deletes
        );
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn many_keys_concurrent() {
            $crate::conformance::many_keys_concurrent(__store().await, $keys).await
        }
    };
    (@tests $keys:expr; $($name:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            $crate::conformance::$name(__store().await).await
        }
    )*};
}
pub(crate) use conformance_suite;

pub use crate::conformance_limits::{
    census_counts_by_scene_and_state, huge_durations_are_capped, purge_report_counts_then_deletes,
};

type Res<T> = Result<T, AppError>;

fn short(store: Arc<dyn Store>, p: &str) -> idem::Idem {
    handle(store, p)
}

pub async fn first_call_runs_and_stores(store: Arc<dyn Store>) {
    let idem = short(store, "first");
    let runs = Counter::default();
    let out = idem
        .guard("order-create", &[&1u64, &"r1"])
        .run(|fence| {
            let runs = runs.clone();
            async move {
                runs.hit();
                assert!(fence.is_valid());
                Res::Ok(format!("order-{}", 1))
            }
        })
        .await
        .unwrap();
    assert_eq!(out.how(), How::Executed);
    assert_eq!(out.value(), "order-1");
    assert_eq!(runs.get(), 1);
    let key = idem.key("order-create", &[&1u64, &"r1"]);
    match idem.inspect(&key).await.unwrap() {
        Some(RecordState::Done { record, .. }) => assert_eq!(record.fence, out.fence()),
        other => panic!("expected a finished record, got {other:?}"),
    }
}

pub async fn sequential_repeats_run_once(store: Arc<dyn Store>) {
    let idem = short(store, "seq");
    let runs = Counter::default();
    let mut fences = Vec::new();
    for i in 0..10 {
        let out = idem
            .guard("pay", &[&"u1", &"req-9"])
            .run(|_| {
                let runs = runs.clone();
                async move { Res::Ok(runs.hit() * 100) }
            })
            .await
            .unwrap();
        assert_eq!(*out.value(), 100, "round {i} must see the first value");
        assert_eq!(out.is_replay(), i > 0);
        fences.push(out.fence());
    }
    assert_eq!(runs.get(), 1);
    assert!(
        fences.windows(2).all(|w| w[0] == w[1]),
        "replays carry the first fence"
    );
    let stats = idem.stats();
    assert_eq!(stats.count("executed"), 1);
    assert_eq!(stats.count("replayed"), 9);
    assert!((stats.interception_rate() - 0.9).abs() < 1e-9);
}

async fn concurrent_callers(
    idem: &idem::Idem,
    key: &str,
    n: usize,
    delay: Duration,
    c: Concurrency,
) -> (Counter, Vec<Res<idem::Outcome<String>>>) {
    let runs = Counter::default();
    let barrier = Arc::new(Barrier::new(n));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..n {
        let (idem, runs, barrier, key) =
            (idem.clone(), runs.clone(), barrier.clone(), key.to_owned());
        tasks.spawn(async move {
            barrier.wait().await;
            idem.guard("conc", &[&key])
                .concurrent(c)
                .lease(FULL_BUDGET_LEASE)
                .wait(Duration::from_secs(10))
                .run(|fence| async move {
                    runs.hit();
                    tokio::time::sleep(delay).await;
                    Res::Ok(format!("done@{fence}"))
                })
                .await
        });
    }
    let results = tasks.join_all().await;
    (runs, results)
}

pub async fn concurrent_wait_runs_once(store: Arc<dyn Store>) {
    let idem = short(store, "cw");
    let (runs, results) = concurrent_callers(
        &idem,
        "k",
        50,
        Duration::from_millis(300),
        Concurrency::Wait,
    )
    .await;
    assert_eq!(runs.get(), 1);
    let values: Vec<String> = results
        .into_iter()
        .map(|r| r.unwrap().into_inner())
        .collect();
    assert!(
        values.iter().all(|v| v == &values[0]),
        "every caller gets the first value"
    );
    let stats = idem.stats();
    assert_eq!(stats.count("executed"), 1);
    assert!(
        stats.count("waited") >= 1,
        "waiters were observed: {stats:?}"
    );
    assert_eq!(stats.count("waited") + stats.count("replayed"), 49);
}

/// The operation timeout of the burst tests: the server's answer only, which
/// stays far below it on this machine even at load 15 (answers under 500 ms
/// measured during the `IDEM_STRESS=1` runs, with rare stalls of the whole
/// machine near 1 s), while a 10,000-caller burst takes 3–6 s to drain: the
/// queueing that used to count against this timeout (issue 20) is longer than it.
pub const BURST_OP_TIMEOUT: Duration = Duration::from_secs(3);

/// `keys` × 50 callers start at once: one body per key, every caller gets its
/// key's value, waiters are observed.
///
/// The burst puts `keys` × 50 claims on the store at once (10,000 under
/// `IDEM_STRESS=1`). On a store with a send queue (Redis, the SQL stores) they
/// wait for a turn in the client, bounded by their `wait` (60 s), and the
/// operation timeout measures only the server's answer (issue 20): a healthy
/// store under a burst is never reported unavailable, so every caller is
/// served on its first call. (Before, the queueing counted against the
/// timeout: at 200 keys the claims failed closed with "no answer within
/// 800ms" and opened the breaker for everyone; the test then retried them.)
pub async fn many_keys_concurrent(store: Arc<dyn Store>, keys: usize) {
    let idem = idem::Idem::builder()
        .shared_store(store)
        .namespace(crate::support::unique_ns("mk"))
        .op_timeout(BURST_OP_TIMEOUT)
        .build()
        .expect("valid handle");
    let per_key = 50;
    let runs: Vec<Counter> = (0..keys).map(|_| Counter::default()).collect();
    let barrier = Arc::new(Barrier::new(keys * per_key));
    let mut tasks = tokio::task::JoinSet::new();
    for (k, counter) in runs.iter().enumerate() {
        for _ in 0..per_key {
            let (idem, counter, barrier) = (idem.clone(), counter.clone(), barrier.clone());
            tasks.spawn(async move {
                barrier.wait().await;
                idem.guard("many", &[&k])
                    .lease(Duration::from_secs(30))
                    .wait(Duration::from_secs(60))
                    .run(|_| async move {
                        counter.hit();
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        Res::Ok(k)
                    })
                    .await
                    .map(|o| (k, o.into_inner()))
            });
        }
    }
    for r in tasks.join_all().await {
        let (k, v) = r.expect("every caller is served on its first call");
        assert_eq!(k, v, "each caller gets its own key's value");
    }
    for (k, c) in runs.iter().enumerate() {
        assert_eq!(c.get(), 1, "key {k} executed {} times", c.get());
    }
    let stats = idem.stats();
    assert_eq!(stats.count("executed") as usize, keys);
    assert!(stats.count("waited") > 0, "waiters were observed");
}

pub async fn concurrent_reject(store: Arc<dyn Store>) {
    let idem = short(store, "cr");
    let (runs, results) = concurrent_callers(
        &idem,
        "k",
        20,
        Duration::from_millis(500),
        Concurrency::Reject,
    )
    .await;
    assert_eq!(runs.get(), 1);
    let ok = results.iter().filter(|r| r.is_ok()).count();
    let in_progress = results
        .iter()
        .filter(|r| matches!(r, Err(AppError::Idem(Error::InProgress { .. }))))
        .count();
    assert_eq!(ok + in_progress, 20);
    assert!(in_progress >= 1, "duplicates were rejected");
}

pub async fn fail_then_retry(store: Arc<dyn Store>) {
    let idem = short(store, "ftr");
    let runs = Counter::default();
    let call = |fail: bool| {
        let runs = runs.clone();
        idem.guard("refund", &[&"r-1"]).run(move |_| async move {
            runs.hit();
            if fail {
                Err(AppError::Business("gateway timeout".into()))
            } else {
                Res::Ok(7)
            }
        })
    };
    assert!(matches!(call(true).await, Err(AppError::Business(_))));
    let out = call(false).await.unwrap();
    assert_eq!((out.how(), *out.value()), (How::Executed, 7));
    let again = call(false).await.unwrap();
    assert!(again.is_replay());
    assert_eq!(
        runs.get(),
        2,
        "the failed attempt released the key; the retry ran once"
    );
    assert_eq!(idem.stats().count("released"), 1);
}

pub async fn waiter_takes_over_after_failure(store: Arc<dyn Store>) {
    let idem = short(store, "wt");
    let runs = Counter::default();
    let barrier = Arc::new(Barrier::new(10));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..10 {
        let (idem, runs, barrier) = (idem.clone(), runs.clone(), barrier.clone());
        tasks.spawn(async move {
            barrier.wait().await;
            idem.guard("takeover", &[&"k"])
                .wait(Duration::from_secs(10))
                .lease(FULL_BUDGET_LEASE)
                .run(|_| async move {
                    let n = runs.hit();
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    if n == 1 {
                        Err(AppError::Business("first attempt fails".into()))
                    } else {
                        Res::Ok(n)
                    }
                })
                .await
        });
    }
    let results = tasks.join_all().await;
    let failures = results.iter().filter(|r| r.is_err()).count();
    assert_eq!(failures, 1, "only the failing attempt errs");
    assert_eq!(runs.get(), 2, "exactly one waiter took over");
    assert!(results.iter().flatten().all(|o| *o.value() == 2));
}

pub async fn payload_mismatch(store: Arc<dyn Store>) {
    let idem = short(store, "mm");
    let runs = Counter::default();
    let call = |amount: u32| {
        let runs = runs.clone();
        idem.guard("charge", &[&"req-1"])
            .fingerprint(&serde_json::json!({"amount": amount, "currency": "EUR"}))
            .run(move |_| async move {
                runs.hit();
                Res::Ok(amount)
            })
    };
    assert_eq!(*call(10).await.unwrap().value(), 10);
    match call(20).await {
        Err(AppError::Idem(Error::PayloadMismatch { key, .. })) => assert!(key.contains("charge")),
        other => panic!("expected PayloadMismatch, got {other:?}"),
    }
    assert!(call(10).await.unwrap().is_replay());
    assert_eq!(runs.get(), 1);
}

pub async fn lease_takeover_after_crash(store: Arc<dyn Store>) {
    let idem = short(store.clone(), "lt");
    let key = idem.key("crash", &[&"k"]);
    // A process claims and dies: the claim is left behind with a 1 s lease.
    let dead = Owner::random();
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
        .run(|_| async { Res::Ok(0) })
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
        .run(|fence| async move { Res::Ok(fence.get()) })
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
            .run(|_| async { Res::Ok(0u64) })
            .await
            .unwrap()
            .is_replay()
    );
}

pub async fn stale_owner_has_no_effect(store: Arc<dyn Store>) {
    let idem = short(store.clone(), "so");
    let key = idem.key("stale", &[&"k"]);
    let (a, b) = (Owner::random(), Owner::random());
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
    let c = Owner::random();
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
        .run(|_| {
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
        .run(|_| {
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
            .run(|_| async { Res::Ok(0) })
            .await
            .unwrap();
        assert_eq!((again.how(), *again.value()), (How::Replayed, v));
    }
    assert_eq!(runs.get(), 2);
}

pub async fn cancel_before_body_releases(store: Arc<dyn Store>) {
    let faulty = Arc::new(FaultyStore::new(store));
    let idem = short(faulty.clone(), "cb");
    let runs = Counter::default();
    // The claim applies at once but its reply takes 1 s; the caller gives up after 200 ms.
    faulty.set_reply_delay(Some(Duration::from_secs(1)));
    let r = tokio::time::timeout(
        Duration::from_millis(200),
        idem.guard("cancel", &[&"k"]).run(|_| {
            let runs = runs.clone();
            async move {
                runs.hit();
                Res::Ok(1)
            }
        }),
    )
    .await;
    assert!(r.is_err(), "the call was cancelled");
    faulty.set_reply_delay(None);
    let key = idem.key("cancel", &[&"k"]);
    // The dropped call released its claim (in a spawned task): the key frees promptly.
    let mut freed = false;
    for _ in 0..100 {
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
        .run(|_| {
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
            .run(|_| async move {
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
        .run(|_| async { Res::Ok(9) })
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
        .run(|_| {
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
            .run(|f| async move { Res::Ok(f.get()) })
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

pub async fn unavailable_fails_closed(store: Arc<dyn Store>) {
    let faulty = Arc::new(FaultyStore::new(store));
    let idem = short(faulty.clone(), "un");
    faulty.set_unavailable(true);
    let runs = Counter::default();
    let r = idem
        .guard("down", &[&"k"])
        .run(|_| {
            let runs = runs.clone();
            async move {
                runs.hit();
                Res::Ok(1)
            }
        })
        .await;
    match r {
        Err(AppError::Idem(Error::StoreUnavailable { key, .. })) => assert!(key.contains("down")),
        other => panic!("expected StoreUnavailable, got {other:?}"),
    }
    assert_eq!(runs.get(), 0, "fail closed: the body did not run");
}

async fn insert_order(pool: &sqlx::SqlitePool, order_no: &str, runs: &Counter) -> Res<i64> {
    runs.hit();
    let id =
        sqlx::query_scalar("INSERT INTO orders (order_no, amount) VALUES (?, 100) RETURNING id")
            .bind(order_no)
            .fetch_one(pool)
            .await?;
    Ok(id)
}

async fn find_order(pool: &sqlx::SqlitePool, order_no: &str) -> Res<i64> {
    Ok(
        sqlx::query_scalar("SELECT id FROM orders WHERE order_no = ?")
            .bind(order_no)
            .fetch_one(pool)
            .await?,
    )
}

pub async fn degraded_backstop_one_row(store: Arc<dyn Store>) {
    let (pool, _dir) = sqlite_business_db().await;
    let faulty = Arc::new(FaultyStore::new(store));
    let idem = short(faulty.clone(), "dg");
    let runs = Counter::default();
    let call = || {
        let (pool, runs) = (pool.clone(), runs.clone());
        let pool2 = pool.clone();
        idem.guard("order", &[&"no-1"])
            .backstop("uk_order_no")
            .degrade_to_backstop()
            .run_with(
                Hooks::new()
                    .detect(idem::std_error)
                    .on_conflict(move || async move { find_order(&pool2, "no-1").await }),
                move |_| async move { insert_order(&pool, "no-1", &runs).await },
            )
    };
    faulty.set_unavailable(true);
    let first = call().await.unwrap();
    assert_eq!(first.how(), How::Degraded);
    let second = call().await.unwrap();
    assert_eq!(second.how(), How::Backstop);
    assert_eq!(first.value(), second.value());
    faulty.set_unavailable(false);
    tokio::time::sleep(Duration::from_millis(2100)).await; // breaker cooldown
    let third = call().await.unwrap();
    assert!(third.is_replay(), "{third:?}");
    assert_eq!(
        order_rows(&pool, "no-1").await,
        1,
        "exactly one business row"
    );
    assert!(idem.stats().backstop_hits() >= 1);
}

pub async fn backstop_on_conflict_replays(store: Arc<dyn Store>) {
    let (pool, _dir) = sqlite_business_db().await;
    let idem = short(store, "bs");
    let runs = Counter::default();
    // Another path already created the order (e.g. before idem was deployed, or a lost key).
    sqlx::query("INSERT INTO orders (order_no, amount) VALUES ('no-7', 100)")
        .execute(&pool)
        .await
        .unwrap();
    let pool2 = pool.clone();
    let out = idem
        .guard("order", &[&"no-7"])
        .backstop("uk_order_no")
        .run_with(
            Hooks::new()
                .detect(idem::std_error)
                .on_conflict(move || async move { find_order(&pool2, "no-7").await }),
            |_| {
                let (pool, runs) = (pool.clone(), runs.clone());
                async move { insert_order(&pool, "no-7", &runs).await }
            },
        )
        .await
        .unwrap();
    assert_eq!(out.how(), How::Backstop);
    assert_eq!(*out.value(), find_order(&pool, "no-7").await.unwrap());
    // The looked-up result was stored: the next duplicate is a plain replay.
    // (A backstop needs detection even on a replay: without it the call is refused.)
    let again = idem
        .guard("order", &[&"no-7"])
        .backstop("uk_order_no")
        .run_with(Hooks::new().detect(idem::std_error), |_| async {
            Res::Ok(-1i64)
        })
        .await
        .unwrap();
    assert_eq!((again.how(), again.value()), (How::Replayed, out.value()));
    assert_eq!(order_rows(&pool, "no-7").await, 1);
    assert_eq!(idem.stats().backstop_hits(), 1);
}

pub async fn backstop_without_lookup_is_duplicate(store: Arc<dyn Store>) {
    let (pool, _dir) = sqlite_business_db().await;
    let idem = short(store, "bd");
    let runs = Counter::default();
    sqlx::query("INSERT INTO orders (order_no, amount) VALUES ('no-8', 1)")
        .execute(&pool)
        .await
        .unwrap();
    let r = idem
        .guard("order", &[&"no-8"])
        .backstop("uk_order_no")
        .run_with(Hooks::new().detect(idem::std_error), |_| {
            let (pool, runs) = (pool.clone(), runs.clone());
            async move { insert_order(&pool, "no-8", &runs).await }
        })
        .await;
    match r {
        Err(AppError::Idem(Error::Duplicate { constraint, .. })) => {
            assert_eq!(constraint, "uk_order_no")
        }
        other => panic!("expected Duplicate, got {other:?}"),
    }
    // A unique violation of another constraint is the body's own error, not a backstop hit.
    let r = idem
        .guard("order", &[&"no-9"])
        .backstop("uk_other")
        .run_with(Hooks::new().detect(idem::std_error), |_| {
            let (pool, runs) = (pool.clone(), runs.clone());
            async move { insert_order(&pool, "no-8", &runs).await }
        })
        .await;
    assert!(
        matches!(
            r,
            Err(AppError::Db(_)) | Err(AppError::Idem(Error::Duplicate { .. }))
        ),
        "{r:?}"
    );
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
enum PayError {
    Declined(String),
    Retryable,
    Idem(String),
}
impl From<Error> for PayError {
    fn from(e: Error) -> Self {
        PayError::Idem(e.to_string())
    }
}

pub async fn terminal_error_replayed(store: Arc<dyn Store>) {
    let idem = short(store, "te");
    let runs = Counter::default();
    let call = |k: &'static str, err: PayError| {
        let runs = runs.clone();
        let err = std::sync::Mutex::new(Some(err));
        idem.guard("pay", &[&k]).run_with(
            Hooks::new().terminal(Terminal::new(|e: &PayError| {
                matches!(e, PayError::Declined(_))
            })),
            move |_| async move {
                runs.hit();
                Err::<u32, _>(err.lock().unwrap().take().unwrap())
            },
        )
    };
    assert_eq!(
        call("a", PayError::Declined("card".into())).await,
        Err(PayError::Declined("card".into()))
    );
    assert_eq!(
        call("a", PayError::Retryable).await,
        Err(PayError::Declined("card".into())),
        "terminal error replayed"
    );
    assert_eq!(runs.get(), 1);
    assert_eq!(
        call("b", PayError::Retryable).await,
        Err(PayError::Retryable)
    );
    assert_eq!(
        call("b", PayError::Retryable).await,
        Err(PayError::Retryable)
    );
    assert_eq!(runs.get(), 3, "non-terminal errors release the key");
}

pub async fn version_mismatch_is_codec(store: Arc<dyn Store>) {
    let idem = short(store, "vm");
    idem.guard("v", &[&"k"])
        .version(1)
        .run(|_| async { Res::Ok(1u8) })
        .await
        .unwrap();
    let r = idem
        .guard("v", &[&"k"])
        .version(2)
        .run(|_| async { Res::Ok(2u8) })
        .await;
    match r {
        Err(AppError::Idem(Error::Codec { key, detail })) => {
            assert!(key.ends_with(":v:k"), "{key}");
            assert!(detail.contains("version 1"), "{detail}");
        }
        other => panic!("expected Codec, got {other:?}"),
    }
    // Same version, different type: a typed error too, never garbage.
    let r = idem
        .guard("v", &[&"k"])
        .version(1)
        .run(|_| async { Res::Ok(String::from("x")) })
        .await;
    assert!(
        matches!(r, Err(AppError::Idem(Error::Codec { .. }))),
        "{r:?}"
    );
}

pub async fn hostile_key_parts(store: Arc<dyn Store>) {
    let idem = short(store, "hk");
    let big = "x".repeat(10_000);
    let parts: Vec<String> = vec![
        "a:b".into(),
        "a%3Ab".into(),
        "{tag}".into(),
        "%7Btag%7D".into(),
        "<user_id>".into(),
        "line\nbreak".into(),
        "nul\0".into(),
        big.clone(),
        format!("{big}y"),
        "订单-🚀".into(),
        "".into(),
        " ".into(),
        "*?[]".into(),
    ];
    let runs = Counter::default();
    for (i, p) in parts.iter().enumerate() {
        for _ in 0..2 {
            let out = idem
                .guard("hostile", &[&p.as_str(), &"tail"])
                .run(|_| {
                    let runs = runs.clone();
                    async move {
                        runs.hit();
                        Res::Ok(i)
                    }
                })
                .await
                .unwrap();
            assert_eq!(*out.value(), i, "part {i} must not collide with another");
        }
    }
    assert_eq!(runs.get(), parts.len());
}

pub async fn breaker_stops_paying_timeouts(store: Arc<dyn Store>) {
    let faulty = Arc::new(FaultyStore::new(store));
    // A cooldown no part of this test outlives: with the default 2 s, a loaded
    // machine could let it expire during the quiet wait below, and the half-open
    // probe would reach the store (issue 18 audit).
    let cooldown = Duration::from_secs(60);
    let idem = idem::Idem::builder()
        .shared_store(faulty.clone())
        .namespace(crate::support::unique_ns("br"))
        .op_timeout(Duration::from_millis(800))
        .circuit_breaker(5, cooldown)
        .build()
        .expect("valid handle");
    faulty.set_unavailable(true);
    for i in 0..5 {
        let r = idem.guard("br", &[&i]).run(|_| async { Res::Ok(()) }).await;
        assert!(matches!(
            r,
            Err(AppError::Idem(Error::StoreUnavailable { .. }))
        ));
    }
    // The calls that failed before the breaker opened release their (possibly
    // applied) claims in the background: let those land before counting.
    wait_for_quiet_ops(&faulty).await;
    let ops = faulty.counts().ops;
    let t0 = std::time::Instant::now();
    for i in 0..100 {
        let r = idem.guard("br", &[&i]).run(|_| async { Res::Ok(()) }).await;
        assert!(matches!(
            r,
            Err(AppError::Idem(Error::StoreUnavailable { .. }))
        ));
    }
    assert_eq!(faulty.counts().ops, ops, "open breaker: no store calls");
    // Precondition of the count above: the breaker stayed open throughout.
    assert!(t0.elapsed() < cooldown);
}

/// Waits until `faulty` saw no new operation for 100 ms (at most 3 s).
async fn wait_for_quiet_ops(faulty: &FaultyStore<Arc<dyn Store>>) {
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    let mut last = faulty.counts().ops;
    while std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = faulty.counts().ops;
        if now == last {
            return;
        }
        last = now;
    }
}

/// A claim that applied but whose reply was lost on every attempt fails the call
/// with `StoreUnavailable`; the guard then releases it in the background, so the
/// key is free again at once instead of after the lease.
pub async fn failed_claim_is_released(store: Arc<dyn Store>) {
    let faulty = Arc::new(FaultyStore::new(store));
    let idem = short(faulty.clone(), "fcr");
    let runs = Counter::default();
    let lease = Duration::from_secs(30);
    // Three claim attempts, each applied with its reply lost; the background
    // release may lose its reply too (it still applies).
    faulty.lose_next_replies(4);
    let first = idem
        .guard("fcr", &[&"k"])
        .lease(lease)
        .run(|_| {
            let runs = runs.clone();
            async move { Res::Ok(runs.hit()) }
        })
        .await;
    assert!(
        matches!(first, Err(AppError::Idem(Error::StoreUnavailable { .. }))),
        "{first:?}"
    );
    assert_eq!(runs.get(), 0);
    assert!(
        faulty.counts().lost_replies >= 3,
        "every claim attempt lost"
    );
    faulty.lose_next_replies(0);
    key_is_freed_and_runs_at_once(&idem, "fcr", lease, &runs).await;
}

/// The same with a hung store: the claim applies, its reply comes after the
/// operation timeout.
pub async fn hung_claim_is_released(store: Arc<dyn Store>) {
    let faulty = Arc::new(FaultyStore::new(store));
    let idem = short(faulty.clone(), "hcr");
    let runs = Counter::default();
    let lease = Duration::from_secs(30);
    faulty.set_reply_delay(Some(Duration::from_millis(1500)));
    let first = idem
        .guard("hcr", &[&"k"])
        .lease(lease)
        .run(|_| {
            let runs = runs.clone();
            async move { Res::Ok(runs.hit()) }
        })
        .await;
    faulty.set_reply_delay(None);
    assert!(
        matches!(first, Err(AppError::Idem(Error::StoreUnavailable { .. }))),
        "{first:?}"
    );
    assert_eq!(runs.get(), 0);
    key_is_freed_and_runs_at_once(&idem, "hcr", lease, &runs).await;
}

/// After a failed claim: the key becomes free within 5 s (inspect -> None) and
/// the next call executes at once, well within the `lease` the orphan had.
async fn key_is_freed_and_runs_at_once(
    idem: &idem::Idem,
    scene: &str,
    lease: Duration,
    runs: &Counter,
) {
    let key = idem.key(scene, &[&"k"]);
    let t0 = std::time::Instant::now();
    loop {
        match idem.inspect(&key).await.unwrap() {
            None => break,
            Some(RecordState::InProgress { .. }) if t0.elapsed() < Duration::from_secs(5) => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            other => panic!("the orphaned claim was not released: {other:?}"),
        }
    }
    let t1 = std::time::Instant::now();
    let out = idem
        .guard(scene, &[&"k"])
        .lease(lease)
        .concurrent(Concurrency::Reject)
        .run(|_| {
            let runs = runs.clone();
            async move { Res::Ok(runs.hit()) }
        })
        .await
        .unwrap();
    assert_eq!(out.how(), How::Executed);
    assert_eq!(*out.value(), 1);
    assert_eq!(runs.get(), 1);
    assert!(
        t1.elapsed() < Duration::from_secs(5),
        "ran at once, not after the lease"
    );
}

pub async fn complete_failure_still_returns_ok(store: Arc<dyn Store>) {
    let faulty = Arc::new(FaultyStore::new(store));
    let idem = short(faulty.clone(), "cf");
    let out = idem
        .guard("cf", &[&"k"])
        .run(|_| {
            let faulty = faulty.clone();
            async move {
                faulty.set_unavailable(true);
                Res::Ok(5)
            }
        })
        .await
        .unwrap();
    assert_eq!((out.how(), *out.value()), (How::Executed, 5));
}

pub async fn inspect_and_forget(store: Arc<dyn Store>) {
    let idem = short(store, "if");
    let key = idem.key("ops", &[&"k"]);
    assert!(idem.inspect(&key).await.unwrap().is_none());
    idem.guard("ops", &[&"k"])
        .run(|_| async { Res::Ok(1) })
        .await
        .unwrap();
    assert!(matches!(
        idem.inspect(&key).await.unwrap(),
        Some(RecordState::Done { .. })
    ));
    assert!(idem.forget(&key).await.unwrap());
    assert!(!idem.forget(&key).await.unwrap());
    let out = idem
        .guard("ops", &[&"k"])
        .run(|_| async { Res::Ok(2) })
        .await
        .unwrap();
    assert_eq!(*out.value(), 2, "forgotten keys run again");
    let _: Fence = out.fence();
}

/// A body that hangs past `max_hold` stops renewing; another caller takes over
/// with a larger fence, and the hung body's late fenced write is rejected.
pub async fn max_hold_lets_hung_body_lapse(store: Arc<dyn Store>) {
    let (pool, _dir) = sqlite_business_db().await;
    sqlx::query("CREATE TABLE balance (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, fence INTEGER NOT NULL)")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO balance VALUES (1, 0, 0)")
        .execute(&pool)
        .await
        .unwrap();
    // The write every body does: fenced, so only the newest claim's write lands.
    async fn fenced_write(pool: &sqlx::SqlitePool, amount: i64, fence: Fence) -> Res<u64> {
        Ok(
            sqlx::query("UPDATE balance SET amount = ?, fence = ? WHERE id = 1 AND fence <= ?")
                .bind(amount)
                .bind(fence.as_i64())
                .bind(fence.as_i64())
                .execute(pool)
                .await?
                .rows_affected(),
        )
    }
    let idem = short(store, "mh");
    let runs = Counter::default();
    let lease = Duration::from_secs(1);
    let max_hold = Duration::from_millis(1200);
    let guard = |amount: i64, hang: Duration, started: Option<tokio::sync::oneshot::Sender<()>>| {
        let (idem, pool, runs) = (idem.clone(), pool.clone(), runs.clone());
        async move {
            idem.guard("hung", &[&"k"])
                .lease(lease)
                .max_hold(max_hold)
                .wait(Duration::from_secs(8))
                .run(move |fence| async move {
                    runs.hit();
                    if let Some(tx) = started {
                        let _ = tx.send(());
                    }
                    tokio::time::sleep(hang).await;
                    fenced_write(&pool, amount, fence).await
                })
                .await
        }
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    // Taken before the hung call's claim is sent: that claim cannot lapse before
    // `t0 + lease`, however late its reply or the body's start come.
    let t0 = std::time::Instant::now();
    let hung = tokio::spawn(guard(111, Duration::from_secs(5), Some(tx)));
    rx.await.unwrap();
    let second = guard(222, Duration::ZERO, None).await.unwrap();
    let took = t0.elapsed();
    assert_eq!(second.how(), How::Executed, "the second caller took over");
    assert_eq!(*second.value(), 1, "its fenced write landed");
    // Renewal stops so the lease ends by `max_hold` after the claim was sent; a
    // renewal applied late (within its budget, a third of the lease) moves that
    // by one budget; then the second caller's poll in flight, its claim and its
    // complete take a budget each; 1 s slack.
    let budget = lease / 3;
    let bound = max_hold + budget * 4 + Duration::from_secs(1);
    assert!(
        took >= lease && took < bound,
        "took over after max_hold + lease: {took:?} (bound {bound:?})"
    );
    let late = hung.await.unwrap().unwrap();
    assert_eq!(
        *late.value(),
        0,
        "the hung body's late write was fenced out"
    );
    assert!(late.fence() < second.fence());
    let (amount,): (i64,) = sqlx::query_as("SELECT amount FROM balance WHERE id = 1")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(amount, 222);
    assert_eq!(runs.get(), 2);
}
