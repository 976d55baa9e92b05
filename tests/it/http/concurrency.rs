//! 50 concurrent identical POSTs over loopback: one handler run, never two
//! orders. (The one Rust peer measured, `axum-idempotent` 0.6, ran 50.)

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use tokio::sync::Barrier;

use crate::http::statuses::{Orders, idem_handle, layer, start};
use crate::http::support::{Answer, Client};

const N: usize = 50;

/// Sends `N` copies of one request, released together by a barrier.
async fn burst(client: &Client, key: &str) -> Vec<Answer> {
    let barrier = Arc::new(Barrier::new(N));
    let tasks: Vec<_> = (0..N)
        .map(|_| {
            let (client, barrier, key) = (client.clone(), barrier.clone(), key.to_owned());
            tokio::spawn(async move {
                barrier.wait().await;
                client.post("/orders", &key, r#"{"sku":"A","qty":1}"#).await
            })
        })
        .collect();
    let mut answers = Vec::with_capacity(N);
    for t in tasks {
        answers.push(t.await.expect("request task"));
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_posts_wait_and_replay() {
    let idem = idem_handle("http-50-wait");
    let orders = Orders {
        delay: Duration::from_millis(500),
        ..Orders::default()
    };
    let (_s, client, orders) = start(orders, layer(&idem)).await;
    let answers = burst(&client, "burst-1").await;
    assert_eq!(orders.runs.get(), 1, "one handler run for {N} requests");
    let first: Vec<_> = answers.iter().filter(|a| !a.is_replay()).collect();
    assert_eq!(first.len(), 1, "one executed answer");
    for a in &answers {
        assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
        assert_eq!(a.body, first[0].body, "every copy gets the one order");
        assert_eq!(a.header("location"), first[0].header("location"));
    }
    let s = idem.stats();
    assert_eq!(s.count("executed"), 1);
    assert_eq!(s.count("waited") + s.count("replayed"), (N - 1) as u64);
    assert!(s.count("waited") >= 1, "copies overlapped the first: {s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_posts_reject_with_409() {
    let idem = idem_handle("http-50-reject");
    let orders = Orders {
        delay: Duration::from_millis(500),
        ..Orders::default()
    };
    let (_s, client, orders) = start(orders, layer(&idem).reject_concurrent()).await;
    let answers = burst(&client, "burst-2").await;
    assert_eq!(orders.runs.get(), 1, "one handler run for {N} requests");
    let executed = answers
        .iter()
        .filter(|a| a.status == StatusCode::CREATED && !a.is_replay())
        .count();
    let conflicts: Vec<_> = answers
        .iter()
        .filter(|a| a.status == StatusCode::CONFLICT)
        .collect();
    let replays = answers.iter().filter(|a| a.is_replay()).count();
    assert_eq!(executed, 1);
    assert_eq!(executed + conflicts.len() + replays, N, "{answers:?}");
    assert!(!conflicts.is_empty(), "copies overlapped the first");
    for c in conflicts {
        c.assert_problem(StatusCode::CONFLICT);
        let secs: u64 = c.header("retry-after").unwrap().parse().unwrap();
        let lease = crate::support::FULL_BUDGET_LEASE.as_secs_f64().ceil() as u64;
        assert!((1..=lease).contains(&secs), "the lease left: {secs}");
    }
}

/// A `409` tells the holder's lease left (a dead holder frees the key no
/// later), at most the layer's `retry_after`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_is_the_lease_left_capped() {
    for (cap, lo, hi) in [(None, 10, 20), (Some(4), 4, 4)] {
        let idem = idem_handle("http-retry-after");
        let orders = Orders {
            delay: Duration::from_secs(3),
            ..Orders::default()
        };
        let mut layer = layer(&idem)
            .reject_concurrent()
            .lease(Duration::from_secs(20));
        if let Some(cap) = cap {
            layer = layer.retry_after(Duration::from_secs(cap));
        }
        let (_s, client, orders) = start(orders, layer).await;
        let c = client.clone();
        let first = tokio::spawn(async move { c.post("/orders", "slow", "{}").await });
        while orders.runs.get() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let busy = client.post("/orders", "slow", "{}").await;
        busy.assert_problem(StatusCode::CONFLICT);
        let secs: u64 = busy.header("retry-after").unwrap().parse().unwrap();
        assert!((lo..=hi).contains(&secs), "cap {cap:?}: Retry-After {secs}");
        assert_eq!(first.await.unwrap().status, StatusCode::CREATED);
        assert_eq!(orders.runs.get(), 1);
    }
}
