//! The lock's fast path on Redis (issue 29): `Lock::run_unfenced` and a
//! `#[distributed_lock]` function without an `idem::Fence` parameter take the
//! lock with one native `SET … NX PX … GET`; `run` and a function with the
//! parameter take it through the fence-stamping script, and their fences
//! keep going up across the unfenced acquisitions in between.

use std::time::Duration;

use idem::{Error, Fence, Idem};

use crate::support::redis_server::{Monitor, RedisServer};

#[idem::distributed_lock(key = "lock:native:<id>", lease = "3s", handle = idem)]
async fn plain(idem: &Idem, id: u32) -> Result<u32, Error> {
    Ok(id)
}

#[idem::distributed_lock(key = "lock:native-fenced:<id>", lease = "3s", handle = idem)]
async fn fenced(idem: &Idem, id: u32, fence: Fence) -> Result<Fence, Error> {
    let _ = id;
    Ok(fence)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_unfenced_locks_natively_and_run_by_script() {
    let server = RedisServer::start();
    let idem = server.handle("lk").await;
    // Loads the scripts, so every count below is one command per round trip.
    let warm = idem
        .lock("lock:warm", &[&0u8])
        .run(|g| async move { Ok::<_, Error>(g.fence()) })
        .await
        .unwrap();
    assert!(warm.is_valid());
    let mut mon = Monitor::attach(server.port);
    let _ = mon.take();

    let lease = Duration::from_secs(3);
    let mut last = Fence::NONE;
    for round in 0..3u32 {
        let valid = idem
            .lock("lock:plain", &[&"k"])
            .lease(lease)
            .run_unfenced(|lease| async move { Ok::<_, Error>(lease.is_valid()) })
            .await
            .unwrap();
        assert!(valid, "round {round}: the unfenced holder's lease holds");
        assert_eq!(
            mon.take(),
            ["SET", "EVALSHA"],
            "unfenced = native claim + release script"
        );
        let fence = idem
            .lock("lock:plain", &[&"k"])
            .lease(lease)
            .run(|g| async move { Ok::<_, Error>(g.fence()) })
            .await
            .unwrap();
        assert_eq!(
            mon.take(),
            ["EVALSHA", "EVALSHA"],
            "fenced = claim script + release script"
        );
        assert!(
            fence.is_valid() && fence > last,
            "round {round}: {fence:?} after {last:?}"
        );
        last = fence;
    }

    // The macro: without a fence parameter natively, with it by the script.
    assert_eq!(plain(&idem, 7).await.unwrap(), 7);
    assert_eq!(mon.take(), ["SET", "EVALSHA"]);
    let f = fenced(&idem, 7, Fence::NONE).await.unwrap();
    assert!(f.is_valid(), "the fenced function's body saw a real fence");
    assert_eq!(mon.take(), ["EVALSHA", "EVALSHA"]);
    assert_eq!(idem.stats().count("executed"), 9);
}

/// A native acquisition excludes like the script's: while an unfenced holder
/// runs, a fenced contender and an unfenced one are both refused, and after
/// its release both take the key at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unfenced_holder_excludes_both_kinds_of_contender() {
    let server = RedisServer::start();
    let idem = server.handle("lk").await;
    let idem_ref = &idem;
    let try_plain = || {
        idem_ref
            .lock("lock:ex", &[&1u8])
            .wait(Duration::ZERO)
            .run_unfenced(|_| async { Ok::<_, Error>(()) })
    };
    let try_fenced = || {
        idem_ref
            .lock("lock:ex", &[&1u8])
            .wait(Duration::ZERO)
            .run(|g| async move { Ok::<_, Error>(g.fence()) })
    };
    let (a, b) = idem
        .lock("lock:ex", &[&1u8])
        .run_unfenced(|_| async move { Ok::<_, Error>((try_plain().await, try_fenced().await)) })
        .await
        .unwrap();
    assert!(matches!(a, Err(Error::LockBusy { .. })), "{a:?}");
    assert!(matches!(b, Err(Error::LockBusy { .. })), "{b:?}");
    try_plain().await.expect("released");
    assert!(try_fenced().await.expect("released").is_valid());
    assert_eq!(idem.stats().count("lock_busy"), 2);
}
