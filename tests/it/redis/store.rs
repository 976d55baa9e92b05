//! The Redis and Redis Cluster stores against real servers: the guard semantics,
//! the owner-checked store operations, fences, encoding, round trips and memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idem::fingerprint::Fingerprint;
use idem::store::redis::{RedisClusterStore, RedisStore, redis};
use idem::store::{Claim, ClaimRequest, Owned, Owner, RecordState, Store, StoreError};
use idem::{Error, Fence, Idem};

use crate::support::redis_server::{RedisServer, SHARED_URL, SharedPrefix};

pub(crate) async fn shared_store(prefix: &SharedPrefix) -> RedisStore {
    RedisStore::builder(SHARED_URL)
        .prefix(prefix.0.clone())
        .connect()
        .await
        .expect("shared Redis at 127.0.0.1:6379 must be running")
}

pub(crate) fn req(key: &str, owner: Owner, lease: Duration) -> ClaimRequest<'_> {
    ClaimRequest {
        key,
        owner,
        fingerprint: Fingerprint::NONE,
        lease,
    }
}

pub(crate) async fn claimed(store: &dyn Store, key: &str, owner: Owner, lease: Duration) -> Fence {
    match store.claim(req(key, owner, lease)).await.unwrap() {
        Claim::Claimed { fence } => fence,
        other => panic!("expected a claim on {key}, got {other:?}"),
    }
}

// ---- owner-checked store operations, directly through the Store trait ------------

/// Owner A claims and "crashes"; its lease lapses; B takes over with a bigger
/// fence; A's late complete and release change nothing.
async fn lease_takeover(store: Arc<dyn Store>) {
    let key = "takeover:scene:k";
    let (a, b) = (Owner::fresh(), Owner::fresh());
    let fa = claimed(&*store, key, a, Duration::from_secs(1)).await;
    match store
        .claim(req(key, b, Duration::from_secs(1)))
        .await
        .unwrap()
    {
        Claim::Busy { remaining, .. } => assert!(remaining <= Duration::from_secs(1)),
        other => panic!("B must see A's claim as busy: {other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let fb = claimed(&*store, key, b, Duration::from_secs(5)).await;
    assert!(fb > fa, "takeover fence {fb} must exceed {fa}");
    assert_eq!(
        store
            .complete(key, a, b"I1late", Duration::from_secs(5))
            .await
            .unwrap(),
        Owned::NotOwner
    );
    assert_eq!(store.release(key, a).await.unwrap(), Owned::NotOwner);
    assert_eq!(
        store.renew(key, a, Duration::from_secs(5)).await.unwrap(),
        Owned::NotOwner
    );
    assert_eq!(
        store
            .complete(key, b, b"I1b", Duration::from_secs(5))
            .await
            .unwrap(),
        Owned::Applied
    );
    match store.inspect(key).await.unwrap() {
        Some(RecordState::Done { record, .. }) => {
            assert_eq!(record.owner, b);
            assert_eq!(record.fence, fb);
            assert_eq!(record.payload, b"I1b");
        }
        other => panic!("{other:?}"),
    }
    store.forget(key).await.unwrap();
}

/// Every operation retried by the same owner after a lost reply gives the same answer.
async fn lost_replies_are_retried_safely(store: Arc<dyn Store>) {
    let key = "lost:scene:k";
    let me = Owner::fresh();
    let lease = Duration::from_secs(5);
    let f1 = claimed(&*store, key, me, lease).await;
    let f2 = claimed(&*store, key, me, lease).await;
    assert_eq!(f1, f2, "a retried claim is our own claim, with its fence");
    assert_eq!(store.renew(key, me, lease).await.unwrap(), Owned::Applied);
    assert_eq!(
        store.complete(key, me, b"I1v", lease).await.unwrap(),
        Owned::Applied
    );
    assert_eq!(
        store.complete(key, me, b"I1v", lease).await.unwrap(),
        Owned::Applied
    );
    // A finished record is never released, and renew no longer applies.
    assert_eq!(store.release(key, me).await.unwrap(), Owned::NotOwner);
    assert_eq!(store.renew(key, me, lease).await.unwrap(), Owned::NotOwner);
    match store.claim(req(key, me, lease)).await.unwrap() {
        Claim::Done(rec) => assert_eq!((rec.payload.as_slice(), rec.fence), (&b"I1v"[..], f1)),
        other => panic!("{other:?}"),
    }
    // Release twice: the second (a retry) is Applied too.
    let key2 = "lost:scene:k2";
    claimed(&*store, key2, me, lease).await;
    assert_eq!(store.release(key2, me).await.unwrap(), Owned::Applied);
    assert_eq!(store.release(key2, me).await.unwrap(), Owned::Applied);
    assert_eq!(store.inspect(key2).await.unwrap(), None);
    // Someone else's claim is not ours to release or complete.
    let other = Owner::fresh();
    claimed(&*store, key2, other, lease).await;
    assert_eq!(store.release(key2, me).await.unwrap(), Owned::NotOwner);
    assert_eq!(
        store.complete(key2, me, b"I1x", lease).await.unwrap(),
        Owned::NotOwner
    );
    assert!(
        matches!(store.inspect(key2).await.unwrap(), Some(RecordState::InProgress { owner, .. }) if owner == other)
    );
    for k in [key, key2] {
        store.forget(k).await.unwrap();
    }
}

pub(crate) async fn store_operations(store: Arc<dyn Store>) {
    lease_takeover(Arc::clone(&store)).await;
    lost_replies_are_retried_safely(store).await;
}

macro_rules! shared_redis_tests {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let prefix = SharedPrefix::new();
            let store: Arc<dyn Store> = Arc::new(shared_store(&prefix).await);
            super::$name(store).await;
        }
    )*};
}

mod shared {
    use super::*;
    shared_redis_tests!(lease_takeover, lost_replies_are_retried_safely);
}

// ---- encoding, verify, round trips, memory ------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_values_are_codec_errors() {
    let prefix = SharedPrefix::new();
    let store = shared_store(&prefix).await;
    let mut con = store.connection();
    let garbage = "foreign:scene:garbage";
    let hash = "foreign:scene:hash";
    let old = "foreign:scene:old";
    let _: () = redis::cmd("SET")
        .arg(store.record_key(garbage))
        .arg("hello world")
        .query_async(&mut con)
        .await
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg(store.record_key(hash))
        .arg("f")
        .arg("v")
        .query_async(&mut con)
        .await
        .unwrap();
    // An old/unknown format: right length, unknown state byte.
    let _: () = redis::cmd("SET")
        .arg(store.record_key(old))
        .arg(vec![0x01u8; 60])
        .query_async(&mut con)
        .await
        .unwrap();
    let o = Owner::fresh();
    for key in [garbage, hash, old] {
        let claim = store.claim(req(key, o, Duration::from_secs(1))).await;
        assert!(
            matches!(claim, Err(StoreError::Codec(_))),
            "{key}: {claim:?}"
        );
        assert!(
            matches!(store.inspect(key).await, Err(StoreError::Codec(_))),
            "{key}"
        );
        assert!(matches!(
            store.complete(key, o, b"I1", Duration::from_secs(1)).await,
            Err(StoreError::Codec(_))
        ));
        assert!(matches!(
            store.release(key, o).await,
            Err(StoreError::Codec(_))
        ));
        assert!(matches!(
            store.renew(key, o, Duration::from_secs(1)).await,
            Err(StoreError::Codec(_))
        ));
    }
    // Through the guard the error names the key, and the body never runs.
    let idem = Idem::builder().store(store.clone()).build().unwrap();
    let err = idem
        .guard("foreign", &[&"scene", &"plain"])
        .run(|| async { Ok::<_, Error>(()) })
        .await;
    assert!(err.is_ok(), "an ordinary key works: {err:?}");
    let k = idem.key("foreign", &[&"x"]);
    let _: () = redis::cmd("SET")
        .arg(store.record_key(k.as_str()))
        .arg("junk")
        .query_async(&mut con)
        .await
        .unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    let err = idem
        .guard("foreign", &[&"x"])
        .run(|| async move {
            r.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>(())
        })
        .await
        .unwrap_err();
    match err {
        Error::Codec { key, detail } => {
            assert_eq!(key, k.as_str());
            assert!(detail.contains("not an idem record"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_urls_and_prefixes_fail_when_built() {
    assert!(matches!(
        RedisStore::connect("not a url").await,
        Err(StoreError::Config(_))
    ));
    assert!(matches!(
        RedisStore::builder("redis://127.0.0.1:6379")
            .prefix("a{b")
            .connect()
            .await,
        Err(StoreError::Config(_))
    ));
    assert!(matches!(
        RedisClusterStore::connect(["nope://x"]).await,
        Err(StoreError::Config(_))
    ));
    // Nothing listens on port 1: unavailable, within the connect budget (four
    // times the 1 s default connect timeout), with 1 s slack.
    let t0 = std::time::Instant::now();
    let r = RedisStore::builder("redis://127.0.0.1:1").connect().await;
    assert!(matches!(r, Err(StoreError::Unavailable(_))), "{r:?}");
    let budget = idem::store::redis::DEFAULT_CONNECT_TIMEOUT * 4;
    assert!(
        t0.elapsed() < budget + Duration::from_secs(1),
        "{:?}",
        t0.elapsed()
    );
    // A lazily built store starts while the server is down and fails per call.
    let lazy = RedisStore::builder("redis://127.0.0.1:1")
        .build_lazy()
        .unwrap();
    let r = lazy
        .claim(req("k", Owner::fresh(), Duration::from_secs(1)))
        .await;
    assert!(matches!(r, Err(StoreError::Unavailable(_))), "{r:?}");
    // The redis-rs error is kept as the source, for callers that inspect it.
    let e = r.unwrap_err();
    let source = std::error::Error::source(&e).expect("the driver error as source");
    assert!(
        source.downcast_ref::<redis::RedisError>().is_some(),
        "{source:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_warns_about_eviction_policies() {
    let evicting = RedisServer::start_with(&["--maxmemory-policy", "allkeys-lru"]);
    let store = RedisStore::connect(&evicting.url()).await.unwrap();
    let w = store.verify().await.unwrap();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].0.contains("allkeys-lru"));
    let _ = evicting.cli(&["CONFIG", "SET", "maxmemory-policy", "volatile-lfu"]);
    assert!(store.verify().await.unwrap()[0].0.contains("volatile-lfu"));
    let _ = evicting.cli(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    assert!(store.verify().await.unwrap().is_empty());
}

/// `FLUSHALL` on a test-owned server: the next claim still gets a bigger fence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fences_grow_across_flushall() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let key = "flush:scene:k";
    let mut last = Fence::NONE;
    for _ in 0..3 {
        let o = Owner::fresh();
        let f = claimed(&store, key, o, Duration::from_secs(5)).await;
        assert!(f > last);
        last = f;
        store
            .complete(key, o, b"I1", Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(server.cli(&["FLUSHALL"]).trim(), "OK");
        assert_eq!(store.inspect(key).await.unwrap(), None);
    }
}

/// Keys a SQL record could not hold (over its 768-byte `MAX_KEY_BYTES`, a NUL
/// byte) are ordinary keys to Redis: claimed, completed and read back byte for
/// byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_key_is_storable() {
    let prefix = SharedPrefix::new();
    let store = shared_store(&prefix).await;
    let long = "k".repeat(900);
    let lease = Duration::from_secs(30);
    for key in [long.as_str(), "a\0b", "a\0c"] {
        let o = Owner::fresh();
        claimed(&store, key, o, lease).await;
        assert_eq!(
            store.complete(key, o, key.as_bytes(), lease).await.unwrap(),
            Owned::Applied
        );
    }
    // `a\0b` and `a\0c` are two keys: each holds its own result.
    for key in [long.as_str(), "a\0b", "a\0c"] {
        match store.inspect(key).await.unwrap() {
            Some(RecordState::Done { record, .. }) => assert_eq!(record.payload, key.as_bytes()),
            other => panic!("{key:?}: {other:?}"),
        }
    }
}
