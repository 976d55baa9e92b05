//! The native claim on Redis (`Store::claim_unfenced`: one `SET … NX PX … GET`
//! for a body that never reads its fence, issue 17): the same answers and
//! guarantees as the claim script, fences of fenced claims still only going up,
//! and the round trips of the guard and the macro on that path.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idem::fingerprint::Fingerprint;
use idem::store::{Claim, ClaimRequest, Owned, Owner, RecordState, Store, StoreError};
use idem::{Error, Fence, How, Idem};

use crate::redis::store::{claimed, req, shared_store};
use crate::support::redis_server::{Monitor, RedisServer, SharedPrefix};

const LEASE: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfenced_claims_answer_like_the_script() {
    let prefix = SharedPrefix::new();
    let store = shared_store(&prefix).await;
    let (a, b) = (Owner::fresh(), Owner::fresh());
    let fp = Fingerprint([9; 16]);
    let claim = |owner| ClaimRequest {
        key: "n:a",
        owner,
        fingerprint: fp,
        lease: LEASE,
    };
    assert_eq!(
        store.claim_unfenced(claim(a)).await.unwrap(),
        Claim::Claimed { fence: Fence::NONE },
        "an absent key is taken, without a fence"
    );
    assert_eq!(
        store.claim_unfenced(claim(a)).await.unwrap(),
        Claim::Claimed { fence: Fence::NONE },
        "the same owner's retry (lost reply) gets its own claim back"
    );
    match store.claim_unfenced(claim(b)).await.unwrap() {
        Claim::Busy {
            fingerprint,
            remaining,
        } => {
            assert_eq!(fingerprint, fp);
            assert!(
                remaining > Duration::from_secs(1) && remaining <= LEASE,
                "{remaining:?}"
            );
        }
        other => panic!("another owner must see the claim busy, got {other:?}"),
    }
    match store.inspect("n:a").await.unwrap() {
        Some(RecordState::InProgress { owner, fence, .. }) => {
            assert_eq!((owner, fence), (a, Fence::NONE));
        }
        other => panic!("{other:?}"),
    }
    let ttl = Duration::from_secs(30);
    assert_eq!(
        store.complete("n:a", b, b"no", ttl).await.unwrap(),
        Owned::NotOwner,
        "complete stays owner-checked"
    );
    assert_eq!(
        store.complete("n:a", a, b"yes", ttl).await.unwrap(),
        Owned::Applied
    );
    for c in [
        store.claim_unfenced(claim(b)).await.unwrap(),
        store.claim(claim(b)).await.unwrap(),
    ] {
        match c {
            Claim::Done(rec) => {
                assert_eq!((rec.owner, rec.payload.as_slice()), (a, &b"yes"[..]));
                assert_eq!(rec.fingerprint, fp);
            }
            other => panic!("the finished record, got {other:?}"),
        }
    }
    // A released unfenced claim frees the key for the next caller.
    assert_eq!(
        store
            .claim_unfenced(claim(b).clone_with_key("n:b"))
            .await
            .unwrap(),
        Claim::Claimed { fence: Fence::NONE }
    );
    assert_eq!(store.release("n:b", b).await.unwrap(), Owned::Applied);
    assert!(matches!(
        store
            .claim_unfenced(claim(a).clone_with_key("n:b"))
            .await
            .unwrap(),
        Claim::Claimed { .. }
    ));
}

/// `ClaimRequest` with another key (tests only).
trait WithKey<'a> {
    fn clone_with_key(self, key: &'a str) -> ClaimRequest<'a>;
}

impl<'a> WithKey<'a> for ClaimRequest<'a> {
    fn clone_with_key(self, key: &'a str) -> ClaimRequest<'a> {
        ClaimRequest { key, ..self }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_claims_still_go_up_across_unfenced_ones_forget_and_flushall() {
    let server = RedisServer::start();
    let store = idem::store::redis::RedisStore::connect(&server.url())
        .await
        .unwrap();
    let ttl = Duration::from_secs(30);
    let mut last = Fence::NONE;
    for round in 0..3 {
        let a = Owner::fresh();
        let f = claimed(&store, "m", a, LEASE).await;
        assert!(f > last, "round {round}: fence {f:?} after {last:?}");
        last = f;
        store.complete("m", a, b"x", ttl).await.unwrap();
        assert!(store.forget("m").await.unwrap());
        // An unfenced claim and its record in between, then the data is lost.
        let b = Owner::fresh();
        assert_eq!(
            store.claim_unfenced(req("m", b, LEASE)).await.unwrap(),
            Claim::Claimed { fence: Fence::NONE }
        );
        assert_eq!(
            store.complete("m", b, b"y", ttl).await.unwrap(),
            Owned::Applied
        );
        server.cli(&["FLUSHALL"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfenced_claims_refuse_values_that_are_not_records() {
    let prefix = SharedPrefix::new();
    let store = shared_store(&prefix).await;
    let mut con = store.connection();
    let owner = Owner::fresh();
    let _: () = idem::store::redis::redis::cmd("SET")
        .arg(store.record_key("f:str"))
        .arg("hello")
        .query_async(&mut con)
        .await
        .unwrap();
    let _: i64 = idem::store::redis::redis::cmd("HSET")
        .arg(store.record_key("f:hash"))
        .arg("a")
        .arg("b")
        .query_async(&mut con)
        .await
        .unwrap();
    for key in ["f:str", "f:hash"] {
        match store.claim_unfenced(req(key, owner, LEASE)).await {
            Err(StoreError::Codec(msg)) => assert!(!msg.is_empty()),
            other => panic!("{key}: {other:?}"),
        }
    }
    let v: String = idem::store::redis::redis::cmd("GET")
        .arg(store.record_key("f:str"))
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(v, "hello", "a foreign value is never overwritten");
}

#[idem::idempotent(key = "native-mail:<id>", lease = "3s", handle = idem)]
async fn send_mail(idem: &Idem, id: u32) -> Result<u32, Error> {
    Ok(id)
}

#[idem::idempotent(key = "native-fenced:<id>", lease = "3s", handle = idem)]
async fn fenced_write(idem: &Idem, id: u32, fence: Fence) -> Result<u64, Error> {
    let _ = id;
    Ok(fence.get())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trips_without_a_fence() {
    let server = RedisServer::start();
    let idem = server.handle("rt").await;
    let mut mon = Monitor::attach(server.port);
    let _ = mon.take();

    let call = |id: &'static str| {
        let idem = idem.clone();
        async move {
            let out = idem
                .guard("order-create", &[&id])
                .run(|| async { Ok::<_, Error>("x".repeat(200)) })
                .await
                .unwrap();
            assert_eq!(out.value().len(), 200);
            assert_eq!(out.fence(), Fence::NONE, "an unfenced claim has no fence");
            out.how()
        }
    };
    assert_eq!(call("a").await, How::Executed);
    assert_eq!(
        mon.take(),
        ["SET", "EVALSHA"],
        "first call = claim + complete"
    );
    assert_eq!(call("a").await, How::Replayed);
    assert_eq!(mon.take(), ["SET"], "duplicate = one native command");
    let _ = idem
        .guard("order-create", &[&"b"])
        .run(|| async { Err::<(), _>(Error::Config("no".into())) })
        .await;
    assert_eq!(
        mon.take(),
        ["SET", "EVALSHA"],
        "failed body = claim + release"
    );
    // The claim needs no script: a flushed script cache costs the duplicate nothing.
    server.cli(&["SCRIPT", "FLUSH"]);
    let _ = mon.take();
    assert_eq!(call("a").await, How::Replayed);
    assert_eq!(mon.take(), ["SET"]);

    // The macro: a function without an `idem::Fence` parameter claims natively,
    // one with it through the script (and its body sees a valid fence).
    assert_eq!(send_mail(&idem, 7).await.unwrap(), 7);
    assert_eq!(send_mail(&idem, 7).await.unwrap(), 7);
    let seen = mon.take();
    assert_eq!(seen[0], "SET");
    assert_eq!(&seen[1..], ["EVALSHA", "SCRIPT", "EVALSHA", "SET"]);
    let f = fenced_write(&idem, 7, Fence::NONE).await.unwrap();
    assert!(Fence::new(f).is_valid());
    assert_eq!(fenced_write(&idem, 7, Fence::NONE).await.unwrap(), f);
    assert_eq!(
        mon.take(),
        ["EVALSHA", "SCRIPT", "EVALSHA", "EVALSHA", "EVALSHA"]
    );
}

/// Issue 29: the guard's plain `run` is the fast path. On one key, its
/// duplicate is one native `SET … NX PX … GET`, while `run_fenced` asks the
/// claim script, whose fence, once the key is free again, is valid and stays
/// above the earlier ones whatever unfenced claims came in between.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_run_claims_natively_and_run_fenced_by_script() {
    let server = RedisServer::start();
    let store = idem::store::redis::RedisStore::connect(&server.url())
        .await
        .unwrap();
    let idem = Idem::builder()
        .store(store)
        .namespace("default")
        .build()
        .unwrap();
    let key = idem.key("pay", &[&"k"]);
    let plain = || {
        idem.guard("pay", &[&"k"])
            .run(|| async { Ok::<_, Error>(0u64) })
    };
    let fenced = || {
        idem.guard("pay", &[&"k"])
            .run_fenced(|fence| async move { Ok::<_, Error>(fence.get()) })
    };
    let mut mon = Monitor::attach(server.port);
    let _ = mon.take();

    let out = plain().await.unwrap();
    assert_eq!((out.how(), out.fence()), (How::Executed, Fence::NONE));
    assert_eq!(
        mon.take(),
        ["SET", "EVALSHA"],
        "plain first call: native claim"
    );
    assert_eq!(plain().await.unwrap().how(), How::Replayed);
    assert_eq!(mon.take(), ["SET"], "plain duplicate: one native command");
    assert_eq!(fenced().await.unwrap().how(), How::Replayed);
    assert_eq!(
        mon.take(),
        ["EVALSHA"],
        "fenced duplicate: the claim script"
    );

    let mut last = Fence::NONE;
    for round in 0..2 {
        assert!(idem.forget(&key).await.unwrap());
        let _ = mon.take();
        let out = fenced().await.unwrap();
        assert_eq!(mon.take(), ["EVALSHA", "EVALSHA"], "fenced first call");
        let f = out.fence();
        assert!(
            f.is_valid() && f > last,
            "round {round}: {f:?} after {last:?}"
        );
        assert_eq!((out.how(), *out.value()), (How::Executed, f.get()));
        last = f;
        // An unfenced claim and record of the key before the next fenced one.
        assert!(idem.forget(&key).await.unwrap());
        assert_eq!(plain().await.unwrap().fence(), Fence::NONE);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_unfenced_duplicates_run_one_body_and_wait_for_it() {
    let prefix = SharedPrefix::new();
    let store = shared_store(&prefix).await;
    let idem = Idem::builder()
        .store(store)
        .namespace("cw")
        .build()
        .unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(tokio::sync::Barrier::new(8));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (idem, runs, barrier) = (idem.clone(), Arc::clone(&runs), Arc::clone(&barrier));
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            idem.guard("pay", &[&"k"])
                .lease(LEASE)
                .fingerprint(&"payload")
                .run(|| async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    Ok::<_, Error>(42u32)
                })
                .await
                .unwrap()
        }));
    }
    let mut hows = Vec::new();
    for t in tasks {
        let out = t.await.unwrap();
        assert_eq!(*out.value(), 42);
        hows.push(out.how());
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "one body ran");
    assert_eq!(hows.iter().filter(|h| **h == How::Executed).count(), 1);
    assert!(
        hows.contains(&How::Waited),
        "waiters were observed: {hows:?}"
    );

    // A different payload under the same key: a mismatch, the body does not run.
    let r = idem
        .guard("pay", &[&"k"])
        .fingerprint(&"other")
        .run(|| async { Ok::<_, Error>(0u32) })
        .await;
    assert!(matches!(r, Err(Error::PayloadMismatch { .. })), "{r:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
