//! Keys and fences across techniques (issue 24, m): `guard_key`/`lock_key`
//! find their settings under the scene as written; fenced and unfenced callers
//! may share a key and a fenced caller's fence still rises (on every store).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use idem::settings::{Config, Settings};
use idem::store::{RecordState, Store};
use idem::{Error, Fence, How, Idem, MemoryStore};

use crate::support::handle;

/// Defect m (the rule, pinned): fenced and unfenced callers may share a key;
/// a fenced caller's fence still rises above every earlier fence of the key,
/// whatever unfenced claims (which carry no fence) came in between.
pub async fn fenced_fence_rises_above_unfenced_claims(store: Arc<dyn Store>) {
    let idem = handle(store, "eng-mix");
    let key = idem.key("mix", &[&"k"]);
    let fenced = || async {
        idem.guard("mix", &[&"k"])
            .run_fenced(|f| async move { Ok::<_, Error>(f.get()) })
            .await
            .unwrap()
    };
    let f1 = fenced().await;
    assert!(f1.fence().is_valid());
    assert!(idem.forget(&key).await.unwrap());
    let unfenced = idem
        .guard("mix", &[&"k"])
        .run(|| async { Ok::<_, Error>(0u64) })
        .await
        .unwrap();
    assert_eq!(unfenced.how(), idem::How::Executed);
    assert!(idem.forget(&key).await.unwrap());
    let f2 = fenced().await;
    assert!(
        f2.fence() > f1.fence(),
        "fence went from {:?} to {:?} across an unfenced claim",
        f1.fence(),
        f2.fence()
    );
}

/// Issue 29: with `run` the unfenced default, `run_fenced` keeps every fenced
/// guarantee. Calls of one key whose bodies fail (the claim is released and
/// the next call claims again), with failing default `run` calls in between:
/// each fenced body sees a valid fence above the one before, the call that
/// succeeds returns the fence its body saw, and its replay carries it.
pub async fn run_fenced_fences_rise_across_calls(store: Arc<dyn Store>) {
    let idem = handle(store, "eng-rise");
    let failed = |r: &Result<idem::Outcome<u64>, Error>| matches!(r, Err(Error::Config(_)));
    let mut last = Fence::NONE;
    for round in 0..4 {
        let fail = round < 3;
        let seen = Arc::new(AtomicU64::new(0));
        let s = Arc::clone(&seen);
        let r = idem
            .guard("rise", &[&"k"])
            .run_fenced(move |fence| async move {
                s.store(fence.get(), Ordering::SeqCst);
                if fail {
                    Err(Error::Config("the body failed".into()))
                } else {
                    Ok(fence.get())
                }
            })
            .await;
        let f = Fence::new(seen.load(Ordering::SeqCst));
        assert!(
            f.is_valid() && f > last,
            "round {round}: fence {f:?} after {last:?}"
        );
        last = f;
        if fail {
            assert!(failed(&r), "round {round}: {r:?}");
            // An unfenced claim of the key in between, released as well.
            let r = idem
                .guard("rise", &[&"k"])
                .run(|| async { Err(Error::Config("unfenced body failed".into())) })
                .await;
            assert!(failed(&r), "round {round}, unfenced: {r:?}");
        } else {
            let out = r.unwrap();
            assert_eq!(
                (out.how(), out.fence(), *out.value()),
                (How::Executed, f, f.get())
            );
        }
    }
    let again = idem
        .guard("rise", &[&"k"])
        .run(|| async { Ok::<_, Error>(0u64) })
        .await
        .unwrap();
    assert_eq!(
        (again.how(), again.fence(), *again.value()),
        (How::Replayed, last, last.get())
    );
}

macro_rules! suite {
    (store = $store:expr, keys = $keys:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn fenced_fence_rises_above_unfenced_claims() {
            crate::guard::engine_keys::fenced_fence_rises_above_unfenced_claims($store).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn run_fenced_fences_rise_across_calls() {
            crate::guard::engine_keys::run_fenced_fences_rise_across_calls($store).await;
        }
    };
}

crate::support::stores::for_each_store!(suite);

/// Defect m: `guard_key` finds its scene's settings under the scene as written
/// (`order:create`, which the key escapes to `order%3Acreate`), as `guard` does.
#[tokio::test]
async fn guard_key_finds_its_scene_settings_as_written() {
    let two_hours = Duration::from_secs(2 * 3600);
    let idem = Idem::builder()
        .store(MemoryStore::new())
        .namespace(crate::support::unique_ns("eng-scene"))
        .config(Config {
            scenes: [(
                "order:create".to_owned(),
                Settings {
                    ttl: Some(two_hours),
                    ..Settings::default()
                },
            )]
            .into(),
            ..Config::default()
        })
        .build()
        .unwrap();
    let key = idem.key("order:create", &[&1u64]);
    idem.guard_key(key.clone())
        .run(|| async { Ok::<_, Error>(1) })
        .await
        .unwrap();
    match idem.inspect(&key).await.unwrap() {
        Some(RecordState::Done { remaining, .. }) => assert!(
            remaining <= two_hours && remaining + Duration::from_secs(60) > two_hours,
            "remaining {remaining:?}: the scene's 2 h ttl was not applied"
        ),
        other => panic!("{other:?}"),
    }
}

/// Defect m: `lock_key` finds its scene's settings under the scene as written:
/// a scene wait of 200 ms gives `LockBusy` at once, not after the default 5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_key_finds_its_scene_settings_as_written() {
    let idem = Arc::new(
        Idem::builder()
            .store(MemoryStore::new())
            .namespace(crate::support::unique_ns("eng-lock-scene"))
            .config(Config {
                scenes: [(
                    "lock:deduct".to_owned(),
                    Settings {
                        wait: Some(Duration::from_millis(200)),
                        ..Settings::default()
                    },
                )]
                .into(),
                ..Config::default()
            })
            .build()
            .unwrap(),
    );
    let (held_tx, held_rx) = tokio::sync::oneshot::channel::<()>();
    let holder = {
        let idem = Arc::clone(&idem);
        tokio::spawn(async move {
            idem.lock("lock:deduct", &[&7u64])
                .run(|_| async move {
                    let _ = held_tx.send(());
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    Ok::<_, Error>(())
                })
                .await
        })
    };
    held_rx.await.unwrap();
    let t0 = Instant::now();
    let r = idem
        .lock_key(idem.key("lock:deduct", &[&7u64]))
        .run(|_| async { Ok::<_, Error>(()) })
        .await;
    let waited = t0.elapsed();
    assert!(matches!(r, Err(Error::LockBusy { .. })), "{r:?}");
    assert!(
        waited < Duration::from_secs(2),
        "waited {waited:?}: the scene's 200 ms wait was not applied"
    );
    holder.await.unwrap().unwrap();
}
