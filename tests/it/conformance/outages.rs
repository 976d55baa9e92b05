//! Claims that fail or hang in the store, the breaker, completion failures,
//! inspect/forget, and `max_hold` letting a hung body lapse.

use std::sync::Arc;
use std::time::Duration;

use idem::store::RecordState;
use idem::{Concurrency, Error, FaultyStore, Fence, How, Store};

use super::suite::{Res, short};
use crate::support::{AppError, Counter, sqlite_business_db};

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
        let r = idem.guard("br", &[&i]).run(|| async { Res::Ok(()) }).await;
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
        let r = idem.guard("br", &[&i]).run(|| async { Res::Ok(()) }).await;
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
        .run(|| {
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
        .run(|| {
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
        .run(|| {
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
        .run(|| {
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
        .run(|| async { Res::Ok(1) })
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
        .run(|| async { Res::Ok(2) })
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
                .run_fenced(move |fence| async move {
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
