//! Redis servers older than 7.0, and error replies that are not an outage
//! (issue 24 h).
//!
//! `SET … NX … GET`, the native unfenced claim, needs Redis 7.0; the store
//! accepts 5 and 6, so on them it must claim through the script instead of
//! failing every unfenced claim as an outage. The old servers are the real
//! Redis behind [`OldRedis`](crate::support::old_redis), which reports an
//! older version in `INFO` and refuses `SET … NX … GET` the way Redis 6
//! does (its module docs say how, and why that is faithful).
//!
//! And an error *reply* (the server answered, refusing the command) is not a
//! connection failure: it never counts towards opening the circuit breaker.

use std::sync::Arc;
use std::time::Duration;

use idem::store::redis::RedisStore;
use idem::{Error, How, Idem, Store};

use crate::support::old_redis::OldRedis;
use crate::support::redis_server::{RedisServer, SharedPrefix};
use crate::support::{Counter, TEST_OP_TIMEOUT, unique_ns};

fn handle(store: Arc<dyn Store>) -> Idem {
    Idem::builder()
        .shared_store(store)
        .namespace(unique_ns("oldredis"))
        .op_timeout(TEST_OP_TIMEOUT)
        .build()
        .unwrap()
}

/// Ten first calls, a duplicate and a fenced call, all without a fence
/// except the last: every first call runs its body once, the duplicate
/// replays.
async fn calls_work(idem: &Idem, runs: &Counter) {
    for i in 0..10u32 {
        let r = runs.clone();
        let out = idem
            .guard("old-redis", &[&i])
            .run(|| async move { Ok::<_, Error>(r.hit()) })
            .await
            .unwrap_or_else(|e| panic!("unfenced call {i}: {e}"));
        assert_eq!(out.how(), How::Executed);
    }
    let r = runs.clone();
    let again = idem
        .guard("old-redis", &[&3u32])
        .run(|| async move { Ok::<_, Error>(r.hit()) })
        .await
        .unwrap();
    assert_eq!(again.how(), How::Replayed);
    let r = runs.clone();
    let fenced = idem
        .guard("old-redis-fenced", &[&1u32])
        .run_fenced(|fence| async move {
            assert!(fence.is_valid(), "the script's server-time fence");
            Ok::<_, Error>(r.hit())
        })
        .await
        .unwrap();
    assert_eq!(fenced.how(), How::Executed);
    assert_eq!(runs.get(), 11, "ten first calls and one fenced call ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfenced_claims_on_redis_5_and_6_take_the_claim_script() {
    for major in [b'6', b'5'] {
        let prefix = SharedPrefix::new();
        let old = OldRedis::start(6379, major).await;
        // Connected: the version is read at connect.
        let store = RedisStore::builder(old.redis_url())
            .prefix(prefix.0.clone())
            .connect()
            .await
            .expect("connect through the proxy");
        let idem = handle(Arc::new(store));
        let runs = Counter::default();
        calls_work(&idem, &runs).await;
        let warnings = idem.verify(&[]).await.expect("Redis 5 and 6 are accepted");
        let v = format!("Redis {}.", major as char);
        assert!(
            warnings
                .iter()
                .any(|w| w.to_string().contains(&v) && w.to_string().contains("7.0")),
            "verify names the version and what it lacks: {warnings:?}"
        );

        // Built lazily (nothing read at build): the first refusal of the native
        // command switches the store to the script, and that claim still works.
        let prefix = SharedPrefix::new();
        let lazy = RedisStore::builder(old.redis_url())
            .prefix(prefix.0.clone())
            .build_lazy()
            .unwrap();
        let idem = handle(Arc::new(lazy));
        let runs = Counter::default();
        calls_work(&idem, &runs).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_refuses_redis_4_naming_its_version() {
    let prefix = SharedPrefix::new();
    let old = OldRedis::start(6379, b'4').await;
    let store = RedisStore::builder(old.redis_url())
        .prefix(prefix.0.clone())
        .build_lazy()
        .unwrap();
    let e = handle(Arc::new(store)).verify(&[]).await.unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("Redis 4.") && msg.contains("Redis 5"), "{msg}");
}

/// A server that refuses the store's commands (an ACL user without
/// `EVALSHA` and `SET`: every claim, and the background release of an
/// unanswered claim, gets `-NOPERM …`) is answering: the calls fail with the
/// server's reason but the breaker (threshold 2 here) stays closed, and the
/// first call after the permission is granted runs at once instead of
/// meeting "circuit breaker open". The same for a server out of memory
/// (`maxmemory` 1 byte: `-OOM …`) and for WRONGTYPE (a record key holding a
/// hash).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_replies_never_open_the_circuit_breaker() {
    let server = RedisServer::start();
    let acl = ["ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all"];
    assert_eq!(server.cli(&acl).trim(), "OK");
    let deny = ["ACL", "SETUSER", "app", "-evalsha", "-set"];
    assert_eq!(server.cli(&deny).trim(), "OK");
    let url = format!("redis://app:pw@127.0.0.1:{}", server.port);
    let store = RedisStore::builder(url).connect().await.unwrap();
    let idem = Idem::builder()
        .store(store)
        .namespace(unique_ns("replies"))
        .op_timeout(TEST_OP_TIMEOUT)
        .circuit_breaker(2, Duration::from_secs(60))
        .build()
        .unwrap();
    let runs = Counter::default();
    let call = |i: u32, fenced: bool| {
        let (idem, r) = (idem.clone(), runs.clone());
        async move {
            let g = idem.guard("refused", &[&i]);
            if fenced {
                g.run_fenced(|_| async move { Ok::<_, Error>(r.hit()) })
                    .await
            } else {
                g.run(|| async move { Ok::<_, Error>(r.hit()) }).await
            }
        }
    };
    let refused = |word: &'static str| {
        move |r: Result<idem::Outcome<usize>, Error>| match r {
            Err(Error::StoreUnavailable { reason, .. }) => {
                let r = reason.to_ascii_uppercase();
                assert!(r.contains(word), "the server's answer: {reason}")
            }
            other => panic!("the server refuses the claim ({word}): {other:?}"),
        }
    };
    for i in 0..6 {
        refused("NOPERM")(call(i, i % 2 == 0).await);
        // Time for a background release, if any, to be refused as well.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(runs.get(), 0);
    let grant = ["ACL", "SETUSER", "app", "+evalsha", "+set"];
    assert_eq!(server.cli(&grant).trim(), "OK");
    let out = call(100, true).await.expect("the breaker stayed closed");
    assert_eq!(out.how(), How::Executed);

    assert_eq!(
        server.cli(&["CONFIG", "SET", "maxmemory", "1"]).trim(),
        "OK"
    );
    for i in 10..16 {
        refused("OOM")(call(i, i % 2 == 0).await);
    }
    assert_eq!(
        server.cli(&["CONFIG", "SET", "maxmemory", "0"]).trim(),
        "OK"
    );
    let out = call(101, false).await.expect("closed after OOM");
    assert_eq!(out.how(), How::Executed);

    let key = idem.key("wrong", &[&1u32]);
    let redis_key = String::from_utf8(
        RedisStore::builder(server.url())
            .build_lazy()
            .unwrap()
            .record_key(key.as_str()),
    )
    .unwrap();
    server.cli(&["HSET", &redis_key, "f", "v"]);
    for _ in 0..4 {
        let r = idem
            .guard("wrong", &[&1u32])
            .run(|| async { Ok::<_, Error>(1) })
            .await;
        assert!(matches!(r, Err(Error::Codec { .. })), "{r:?}");
    }
    let out = call(102, false).await.expect("closed after WRONGTYPE");
    assert_eq!(out.how(), How::Executed);
    assert_eq!(runs.get(), 3);
}

/// The old server's refusal of `SET … NX … GET` is an answer as well: a
/// lazily built store on "Redis 6" behind a breaker of threshold 1 keeps
/// serving unfenced calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_servers_syntax_error_does_not_open_the_breaker() {
    let prefix = SharedPrefix::new();
    let old = OldRedis::start(6379, b'6').await;
    let store = RedisStore::builder(old.redis_url())
        .prefix(prefix.0.clone())
        .build_lazy()
        .unwrap();
    let idem = Idem::builder()
        .store(store)
        .namespace(unique_ns("syntax"))
        .op_timeout(TEST_OP_TIMEOUT)
        .circuit_breaker(1, Duration::from_secs(60))
        .build()
        .unwrap();
    let runs = Counter::default();
    calls_work(&idem, &runs).await;
}
