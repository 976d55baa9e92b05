//! A test-owned `redis-server` that stops answering: frozen (SIGSTOP) or
//! stalled by a slow command while a call claims.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use idem::store::redis::RedisStore;
use idem::{Error, How, Idem};

use crate::redis::faults::idem_on;
use crate::support::redis_server::RedisServer;

/// A frozen server (SIGSTOP) fails the call within its operation budget, whether
/// the client's own response timeout is shorter than that budget (300 ms) or, as
/// by default, much longer (the guard cuts the attempt, issue 18).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_server_is_unavailable_within_the_timeout() {
    for response_timeout in [Some(Duration::from_millis(300)), None] {
        hung_server_fails_within_the_budget(response_timeout).await;
    }
}

async fn hung_server_fails_within_the_budget(response_timeout: Option<Duration>) {
    let server = RedisServer::start();
    let mut builder = RedisStore::builder(server.url());
    if let Some(t) = response_timeout {
        builder = builder.response_timeout(t);
    }
    let store = builder.connect().await.unwrap();
    let idem = idem_on(store);
    // 3 × the default 1 s op timeout: the call's budget is the whole second.
    let lease = Duration::from_secs(3);
    let op_budget = Duration::from_secs(1);
    let runs = Arc::new(AtomicUsize::new(0));
    let call = || {
        let (idem, runs) = (idem.clone(), Arc::clone(&runs));
        async move {
            let guard = idem.guard("hang", &[&"h"]);
            guard
                .lease(lease)
                .run(|| async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, Error>(1u8)
                })
                .await
        }
    };
    server.freeze();
    let t0 = Instant::now();
    let r = call().await;
    let took = t0.elapsed();
    server.thaw();
    assert!(matches!(r, Err(Error::StoreUnavailable { .. })), "{r:?}");
    // The operation budget bounds the call; 1 s slack.
    assert!(
        took < op_budget + Duration::from_secs(1),
        "{response_timeout:?}: took {took:?}"
    );
    assert!(
        took >= Duration::from_millis(250),
        "a real wait happened: {took:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // The claim sent while the server was frozen runs when it wakes: the guard that
    // gave up on it releases it in the background (or it lapses with its lease),
    // then the next caller runs. Within the lease, the breaker cooldown and
    // a few operation budgets, with slack.
    let deadline = Instant::now() + lease + Duration::from_secs(7);
    loop {
        match call().await {
            Ok(o) => {
                assert_eq!(o.how(), How::Executed);
                break;
            }
            Err(Error::StoreUnavailable { .. } | Error::InProgress { .. })
                if Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A server that stalls for 2 s (a slow command, a fork for persistence on a big
/// data set) while a call with a 3 s operation budget claims: the claim waits for
/// the answer and the call runs. With the former 500 ms client response timeout
/// every attempt failed after 500 ms whatever the caller's budget, and the claim
/// gave up after three of them (issue 18).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_server_answers_within_the_callers_budget() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let stall = Duration::from_secs(2);
    // The budget covers the stall with 1 s slack; the lease leaves it whole.
    let op_timeout = stall + Duration::from_secs(1);
    let idem = Idem::builder()
        .store(store)
        .namespace("stall")
        .op_timeout(op_timeout)
        .build()
        .unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let r2 = Arc::clone(&runs);
    // Every client waits until the pause ends; `CLIENT PAUSE` answers at once.
    let paused = server.cli(&["CLIENT", "PAUSE", &stall.as_millis().to_string(), "ALL"]);
    assert_eq!(paused.trim(), "OK");
    let t0 = Instant::now();
    let out = idem
        .guard("stall", &[&"k"])
        .lease(op_timeout * 3)
        .run(|| async move {
            r2.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>(7u8)
        })
        .await;
    let took = t0.elapsed();
    let out =
        out.unwrap_or_else(|e| panic!("a stalled server is not a dead one: {e:?} after {took:?}"));
    assert_eq!((out.how(), out.into_inner()), (How::Executed, 7));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // The stall really happened (it ended at most `stall` after the pause began).
    assert!(took >= stall / 2, "no stall: {took:?}");
}
