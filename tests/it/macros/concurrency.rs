//! Concurrent callers of `#[idempotent]` functions on the memory store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idem::Idem;
use tokio::sync::{Barrier, Notify};

use crate::macros::support::{AppError, Counter, handle, handles};

// lease ≥ 3 × the 1 s default op timeout, so calls keep their whole budget (issue 18)
#[idem::idempotent(key = "conc-charge:<order_no>", lease = "3s", wait = "10s", handle = idem)]
async fn charge(idem: &Idem, runs: &Counter, order_no: &str) -> Result<String, AppError> {
    let n = runs.hit();
    tokio::time::sleep(Duration::from_millis(300)).await;
    Ok(format!("{order_no}-charged-{n}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_calls_run_the_body_once() {
    for (idem, _dir) in handles().await {
        let idem = Arc::new(idem);
        let runs = Arc::new(Counter::default());
        let barrier = Arc::new(Barrier::new(50));
        let tasks: Vec<_> = (0..50)
            .map(|_| {
                let (idem, runs, barrier) = (idem.clone(), runs.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    charge(&idem, &runs, "o-50").await
                })
            })
            .collect();
        let mut values = Vec::new();
        for t in tasks {
            values.push(t.await.unwrap().unwrap());
        }
        assert_eq!(runs.get(), 1);
        assert!(values.iter().all(|v| v == "o-50-charged-1"), "{values:?}");
        let stats = idem.stats();
        assert_eq!(stats.count("executed"), 1);
        assert!(stats.count("waited") >= 1, "no waiter observed: {stats:?}");
        assert_eq!(
            stats.count("waited") + stats.count("replayed"),
            49,
            "{stats:?}"
        );
    }
}

/// The first call's body runs until the test lets it finish (`proceed`), so the
/// duplicate always meets it running, however slow the machine.
// lease ≥ 3 × the 1 s default op timeout, so calls keep their whole budget (issue 18)
#[idem::idempotent(key = "conc-ship:<id>", lease = "3s", concurrent = "reject", handle = idem)]
async fn ship(idem: &Idem, started: &Notify, proceed: &Notify, id: u32) -> Result<u32, AppError> {
    started.notify_one();
    proceed.notified().await;
    Ok(id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_fails_a_concurrent_duplicate_at_once() {
    // `ship`'s lease; a waiting duplicate would wait this long (wait = lease).
    let lease = Duration::from_secs(3);
    for (idem, _dir) in handles().await {
        let idem = Arc::new(idem);
        let (started, proceed) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let first = {
            let (idem, started, proceed) = (idem.clone(), started.clone(), proceed.clone());
            tokio::spawn(async move { ship(&idem, &started, &proceed, 9).await })
        };
        started.notified().await;
        let t0 = std::time::Instant::now();
        let err = ship(&idem, &Notify::new(), &Notify::new(), 9)
            .await
            .unwrap_err();
        let took = t0.elapsed();
        assert!(
            matches!(err, AppError::Idem(idem::Error::InProgress { .. })),
            "{err:?}"
        );
        // One claim, within its budget (the default 1 s op timeout, a third of
        // the lease), and 1 s slack: below the lease a waiting caller would spend.
        let budget = lease / 3;
        assert!(
            took < budget + Duration::from_secs(1),
            "reject must not wait: {took:?}"
        );
        proceed.notify_one();
        assert_eq!(first.await.unwrap().unwrap(), 9);
        // Once done, a repeat is a replay, not a rejection.
        assert_eq!(
            ship(&idem, &Notify::new(), &Notify::new(), 9)
                .await
                .unwrap(),
            9
        );
        assert_eq!(idem.stats().count("in_progress"), 1);
    }
}

// lease ≥ 3 × the 1 s default op timeout, so calls keep their whole budget (issue 18)
#[idem::idempotent(key = "conc-first:<id>", lease = "3s", wait = "10s", handle = idem)]
async fn first_fails(idem: &Idem, runs: &Counter, id: u32) -> Result<u32, AppError> {
    let n = runs.hit();
    tokio::time::sleep(Duration::from_millis(200)).await;
    if n == 1 {
        return Err(AppError::Transient("first attempt".into()));
    }
    Ok(id + n as u32)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn when_the_running_call_fails_one_waiter_runs() {
    for (idem, _dir) in handles().await {
        let idem = Arc::new(idem);
        let runs = Arc::new(Counter::default());
        let barrier = Arc::new(Barrier::new(10));
        let tasks: Vec<_> = (0..10)
            .map(|_| {
                let (idem, runs, barrier) = (idem.clone(), runs.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    first_fails(&idem, &runs, 100).await
                })
            })
            .collect();
        let mut ok = Vec::new();
        let mut failed = 0;
        for t in tasks {
            match t.await.unwrap() {
                Ok(v) => ok.push(v),
                Err(AppError::Transient(_)) => failed += 1,
                Err(e) => panic!("unexpected {e:?}"),
            }
        }
        assert_eq!(failed, 1);
        assert_eq!(runs.get(), 2, "exactly one waiter re-ran the body");
        assert!(ok.iter().all(|v| *v == 102), "{ok:?}");
    }
}

#[idem::idempotent(key = "conc-a:<k>", lease = "2s", handle = idem)]
async fn fn_a(
    idem: &Idem,
    log: &Mutex<HashMap<(char, u32), u32>>,
    k: u32,
) -> Result<String, AppError> {
    *log.lock().unwrap().entry(('a', k)).or_default() += 1;
    Ok(format!("a{k}"))
}

#[idem::idempotent(key = "conc-b:<k>", lease = "2s", handle = idem)]
async fn fn_b(
    idem: &Idem,
    log: &Mutex<HashMap<(char, u32), u32>>,
    k: u32,
) -> Result<String, AppError> {
    *log.lock().unwrap().entry(('b', k)).or_default() += 1;
    Ok(format!("b{k}"))
}

#[test]
fn two_functions_share_a_handle_across_threads() {
    let keys: u32 = if std::env::var_os("IDEM_STRESS").is_some() {
        20_000
    } else {
        2_000
    };
    {
        // Threads with their own runtimes: the in-process store (a SQLite pool
        // belongs to the runtime that opened it).
        let idem = Arc::new(handle());
        let log = Arc::new(Mutex::new(HashMap::new()));
        let barrier = Arc::new(std::sync::Barrier::new(8));
        let threads: Vec<_> = (0..8u32)
            .map(|t| {
                let (idem, log, barrier) = (idem.clone(), log.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    barrier.wait();
                    rt.block_on(async {
                        // Every thread walks all keys from its own offset, so threads collide.
                        for i in 0..keys {
                            let k = (i + t * keys / 8) % keys;
                            assert_eq!(fn_a(&idem, &log, k).await.unwrap(), format!("a{k}"));
                            assert_eq!(fn_b(&idem, &log, k).await.unwrap(), format!("b{k}"));
                        }
                    });
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 2 * keys as usize);
        assert!(
            log.values().all(|n| *n == 1),
            "a key ran twice for one function"
        );
        let stats = idem.stats();
        assert_eq!(stats.count("executed"), 2 * u64::from(keys));
        assert_eq!(stats.calls(), 16 * u64::from(keys));
    }
}
