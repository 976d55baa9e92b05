//! Issue 32 item 3: the shop's server bounds every wait a client imposes.
//! Raw sockets, so the test controls each byte and sees the close.
//! Limits here are short; the bounds keep >= 3 s of slack for a loaded machine.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::shop::support::app::{IdemStore, server::Limits};
use crate::shop::support::{Running, start};

const SLACK: Duration = Duration::from_secs(3);

fn limits() -> Limits {
    Limits {
        header_read: Duration::from_secs(2),
        idle: Duration::from_secs(1),
        body: Duration::from_secs(1),
        max_body: 4096,
        max_connections: 64,
    }
}

async fn connect(shop: &Running) -> TcpStream {
    TcpStream::connect(shop.serving.addr)
        .await
        .expect("connect")
}

/// Reads until the server closes (`Some(bytes read)`) or `within` passes (`None`).
async fn closed_within(sock: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(deadline, sock.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(got),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_header_trickle_is_closed_at_the_header_timeout() {
    let shop = start(IdemStore::Memory, limits()).await;
    let mut sock = connect(&shop).await;
    let t0 = Instant::now();
    sock.write_all(b"POST /orders HTTP/1.1\r\nHost: shop\r\n")
        .await
        .unwrap();
    // A header line every 200 ms: never idle, never complete.
    let (mut rd, mut wr) = sock.into_split();
    let trickle = tokio::spawn(async move {
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if wr.write_all(b"X-Pad: y\r\n").await.is_err() {
                return;
            }
        }
    });
    let mut buf = [0u8; 1024];
    let closed = tokio::time::timeout(Duration::from_secs(2) + SLACK, async {
        loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
    let after = t0.elapsed();
    trickle.abort();
    assert!(
        closed.is_ok(),
        "a header trickle still held its connection after {after:?}"
    );
    // Bytes kept arriving, so it was the header clock, not the idle one.
    assert!(
        after >= Duration::from_millis(1800),
        "closed after {after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let shop = start(IdemStore::Memory, limits()).await;
    let mut sock = connect(&shop).await;
    sock.write_all(b"GET /inventory/sku-1 HTTP/1.1\r\nHost: shop\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 4096];
    let n = sock.read(&mut buf).await.unwrap();
    let head = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let t0 = Instant::now();
    let closed = closed_within(&mut sock, Duration::from_secs(1) + SLACK).await;
    let after = t0.elapsed();
    assert!(
        closed.is_some(),
        "an idle keep-alive connection was still open after {after:?}"
    );

    // A connection that never sends a byte is idle from the start.
    let mut silent = connect(&shop).await;
    let t0 = Instant::now();
    let closed = closed_within(&mut silent, Duration::from_secs(1) + SLACK).await;
    assert!(
        closed.is_some(),
        "a silent connection was still open after {:?}",
        t0.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_body_that_never_arrives_is_refused_at_the_body_timeout() {
    let shop = start(IdemStore::Memory, limits()).await;
    let mut sock = connect(&shop).await;
    sock.write_all(
        b"POST /orders HTTP/1.1\r\nHost: shop\r\nX-User-Id: 1\r\nIdempotency-Key: stuck\r\n\
          Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"amount\":",
    )
    .await
    .unwrap();
    let t0 = Instant::now();
    let answer = closed_within(&mut sock, Duration::from_secs(1) + SLACK).await;
    let after = t0.elapsed();
    let answer = answer.unwrap_or_else(|| panic!("a stuck upload held its request for {after:?}"));
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 4"), "{text}");
    assert!(text.contains("application/problem+json"), "{text}");
    assert_eq!(shop.count("SELECT COUNT(*) FROM orders").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_is_refused_from_content_length_before_it_is_sent() {
    let shop = start(IdemStore::Memory, limits()).await;
    let mut sock = connect(&shop).await;
    // Ten megabytes declared, not one byte sent: only the header can decide.
    sock.write_all(
        b"POST /orders HTTP/1.1\r\nHost: shop\r\nX-User-Id: 1\r\nIdempotency-Key: big\r\n\
          Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n",
    )
    .await
    .unwrap();
    let mut buf = [0u8; 4096];
    let n = tokio::time::timeout(Duration::from_millis(500) + SLACK, sock.read(&mut buf))
        .await
        .expect("refused before the body was sent")
        .unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("application/problem+json"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_wait_until_one_closes() {
    let shop = start(
        IdemStore::Memory,
        Limits {
            header_read: Duration::from_secs(60),
            idle: Duration::from_secs(60),
            max_connections: 4,
            ..limits()
        },
    )
    .await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(connect(&shop).await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await; // all four accepted
    let mut fifth = connect(&shop).await; // the kernel's backlog takes it
    fifth
        .write_all(b"GET /inventory/sku-1 HTTP/1.1\r\nHost: shop\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let early = closed_within(&mut fifth, Duration::from_secs(1)).await;
    assert!(early.is_none(), "a fifth connection was served: {early:?}");
    drop(held.pop());
    let answer = closed_within(&mut fifth, Duration::from_secs(1) + SLACK)
        .await
        .expect("served once a slot was free");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
}
