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
        assert_eq!(c.header("retry-after"), Some("1"));
    }
}
