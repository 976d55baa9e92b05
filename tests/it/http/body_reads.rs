//! When the layer reads a request body: only when something needs the bytes,
//! the fingerprint or an `on_conflict` lookup. A route whose fingerprint
//! leaves the body out holds no copy of it: a first call streams it to the
//! handler, and a duplicate never reads it. The layer is called as a
//! `tower::Service` here, with a body that counts its reads.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Body;
use axum::routing::post;
use bytes::Bytes;
use futures_util::stream;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use idem::http::{Fingerprinted, IdempotencyLayer};
use tower_service::Service;

use crate::http::statuses::idem_handle;

/// `{"qty":1}`, counting each time it is read.
fn counted(reads: &Arc<AtomicUsize>) -> Body {
    let reads = Arc::clone(reads);
    Body::new(StreamBody::new(stream::once(async move {
        reads.fetch_add(1, Ordering::SeqCst);
        Ok::<_, std::io::Error>(Frame::data(Bytes::from_static(br#"{"qty":1}"#)))
    })))
}

/// Sends one keyed `POST /orders`: the status, whether it is a replay, the body.
async fn send(app: &mut Router, body: Body) -> (StatusCode, bool, Bytes) {
    let req = Request::post("/orders")
        .header("idempotency-key", "k-1")
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    std::future::poll_fn(|cx| Service::<Request<Body>>::poll_ready(app, cx))
        .await
        .unwrap();
    let resp = app.call(req).await.unwrap();
    let replayed = resp.headers().contains_key("idempotent-replayed");
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, replayed, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_left_out_of_the_fingerprint_is_read_only_by_the_handler() {
    // (body fingerprinted, reads on the duplicate)
    for (fingerprinted, dup_reads) in [(false, 0), (true, 1)] {
        let idem = idem_handle(&format!("http-body-reads-{fingerprinted}"));
        let runs = Arc::new(AtomicUsize::new(0));
        let handler = {
            let runs = Arc::clone(&runs);
            move |body: Bytes| async move {
                runs.fetch_add(1, Ordering::SeqCst);
                (StatusCode::CREATED, body)
            }
        };
        let over = Fingerprinted {
            body: fingerprinted,
            ..Fingerprinted::default()
        };
        let mut app = Router::new().route("/orders", post(handler)).layer(
            IdempotencyLayer::new(idem)
                .scene("orders")
                .fingerprint(over),
        );

        let reads = Arc::new(AtomicUsize::new(0));
        let (status, replayed, body) = send(&mut app, counted(&reads)).await;
        assert_eq!((status, replayed), (StatusCode::CREATED, false));
        assert_eq!(&body[..], br#"{"qty":1}"#, "the handler got the whole body");
        assert_eq!(
            reads.load(Ordering::SeqCst),
            1,
            "read once on the first call"
        );

        let reads = Arc::new(AtomicUsize::new(0));
        let (status, replayed, body) = send(&mut app, counted(&reads)).await;
        assert_eq!((status, replayed), (StatusCode::CREATED, true));
        assert_eq!(&body[..], br#"{"qty":1}"#, "the first response, replayed");
        assert_eq!(
            reads.load(Ordering::SeqCst),
            dup_reads,
            "body fingerprinted: {fingerprinted}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}

/// A body the layer does not read still meets its declared limit: a
/// `Content-Length` over `max_request_body` is `413`, and nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unread_body_over_the_limit_is_413() {
    let idem = idem_handle("http-body-unread-413");
    let over = Fingerprinted {
        body: false,
        ..Fingerprinted::default()
    };
    let layer = IdempotencyLayer::new(idem.clone())
        .scene("orders")
        .fingerprint(over)
        .max_request_body(4);
    let mut app = Router::new()
        .route("/orders", post(|| async { StatusCode::CREATED }))
        .layer(layer);
    let (status, _, _) = send(&mut app, Body::from(r#"{"qty":1}"#)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(idem.stats().calls(), 0, "no claim was made");
}
