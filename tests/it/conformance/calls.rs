//! The guard's rules for calls: a first call runs and stores, repeats and
//! concurrent duplicates run once, failures are retried, payload mismatches
//! refused.

use std::sync::Arc;
use std::time::Duration;

use idem::store::RecordState;
use idem::{Concurrency, Error, How, Store};
use tokio::sync::Barrier;

use super::suite::{Res, short};
use crate::support::{AppError, Counter, FULL_BUDGET_LEASE};

pub async fn first_call_runs_and_stores(store: Arc<dyn Store>) {
    let idem = short(store, "first");
    let runs = Counter::default();
    let out = idem
        .guard("order-create", &[&1u64, &"r1"])
        .run_fenced(|fence| {
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
            .run(|| {
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
                .run_fenced(|fence| async move {
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
                    .run(|| async move {
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
        idem.guard("refund", &[&"r-1"]).run(move || async move {
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
                .run(|| async move {
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
            .run(move || async move {
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
