//! The off switch (`IdemBuilder::disabled`): bodies run unguarded and every
//! call is visible (outcome `unguarded`, a `verify()` warning); and the
//! default `wait` (5 s) a concurrent duplicate gives up after.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem::{Error, How, Idem, MemoryStore};
use tokio::sync::Barrier;

use crate::macros::support::{AppError, Counter};

#[idem::idempotent(key = "off-pay:<id>", ttl = "1h", lease = "3s", handle = idem)]
async fn pay(idem: &Idem, runs: &Counter, id: u64) -> Result<usize, AppError> {
    Ok(runs.hit())
}

fn disabled() -> Idem {
    Idem::builder()
        .store(MemoryStore::new())
        .namespace("it")
        .disabled(true)
        .build()
        .expect("memory handle")
}

#[tokio::test]
async fn a_disabled_handle_runs_every_body_and_counts_it() {
    let idem = disabled();
    assert!(idem.is_disabled());
    let runs = Counter::default();
    for n in 1..=3 {
        assert_eq!(pay(&idem, &runs, 1).await.unwrap(), n);
    }
    for _ in 0..2 {
        let out = idem
            .guard("off-refund", &[&1u64])
            .run(|| async { Ok::<_, Error>(7) })
            .await
            .unwrap();
        assert_eq!(out.how(), How::Unguarded);
        assert!(!out.is_replay() && !out.is_stored());
    }
    // Every body ran; nothing was claimed or stored; every call was counted.
    assert_eq!(runs.get(), 3);
    assert!(
        idem.inspect(&idem.key("off-pay", &[&1u64]))
            .await
            .unwrap()
            .is_none()
    );
    let stats = idem.stats();
    assert_eq!(stats.count("unguarded"), 5);
    assert_eq!(stats.count("executed") + stats.count("replayed"), 0);
    // Start-up checks say so.
    let warnings = idem.verify(&[]).await.unwrap();
    assert!(
        warnings.iter().any(|w| w.0.contains("disabled")),
        "{warnings:?}"
    );
    // A body's error is the caller's, still counted as unguarded.
    let e = idem
        .guard("off-refund", &[&2u64])
        .run(|| async { Err::<u8, _>(Error::Config("boom".into())) })
        .await;
    assert!(matches!(e, Err(Error::Config(_))));
    assert_eq!(idem.stats().count("unguarded"), 6);
}

#[tokio::test]
async fn an_enabled_handle_has_no_warning_and_guards() {
    let idem = Idem::builder()
        .store(MemoryStore::new())
        .namespace("it")
        .build()
        .unwrap();
    assert!(!idem.is_disabled());
    let runs = Counter::default();
    for _ in 0..3 {
        assert_eq!(pay(&idem, &runs, 1).await.unwrap(), 1);
    }
    assert_eq!(idem.stats().count("unguarded"), 0);
    let warnings = idem.verify(&[]).await.unwrap();
    assert!(
        !warnings.iter().any(|w| w.0.contains("disabled")),
        "{warnings:?}"
    );
}

/// With the default lease (30 s) and no `wait`, a concurrent duplicate gives
/// up after the 5 s default, not after the whole lease as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_waits_five_seconds_by_default() {
    let idem = Idem::builder()
        .store(MemoryStore::new())
        .namespace("it")
        .build()
        .unwrap();
    let runs = Arc::new(Counter::default());
    let barrier = Arc::new(Barrier::new(2));
    let call = |delay: Duration| {
        let (idem, runs, barrier) = (idem.clone(), runs.clone(), barrier.clone());
        tokio::spawn(async move {
            barrier.wait().await;
            tokio::time::sleep(delay).await;
            let started = Instant::now();
            let r = idem
                .guard("wait-default", &[&1u64])
                .run(|| async move {
                    runs.hit();
                    tokio::time::sleep(Duration::from_secs(9)).await;
                    Ok::<_, Error>(1)
                })
                .await;
            (r.map(|o| o.into_inner()), started.elapsed())
        })
    };
    let first = call(Duration::ZERO);
    // The duplicate starts once the first surely holds the key.
    let second = call(Duration::from_millis(500));
    let (second, waited) = second.await.unwrap();
    match second {
        Err(Error::InProgress { waited: w, .. }) => {
            assert!(w >= Duration::from_millis(4_900), "gave up early: {w:?}");
        }
        other => panic!("expected InProgress, got {other:?}"),
    }
    assert!(
        waited >= Duration::from_millis(4_900) && waited < Duration::from_millis(8_000),
        "the duplicate answered after {waited:?}"
    );
    let (first, _) = first.await.unwrap();
    assert_eq!(first.unwrap(), 1);
    assert_eq!(runs.get(), 1);
    assert_eq!(idem.stats().count("in_progress"), 1);
}
