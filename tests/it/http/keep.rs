//! The keeping rule (issue 26 item 1), on the layer, on `#[idempotent]`
//! handlers and through `StoredResponse::capture`: 2xx–4xx kept; 5xx, 408,
//! 425, 429, 401 and 403 released; a kept response whose body cannot be
//! stored still ends the key, and a repeat gets a problem, never a second run.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use bytes::Bytes;
use http::StatusCode;
use idem::Idem;
use idem::http::StoredResponse;

use crate::http::statuses::{idem_handle, layer};
use crate::http::support::{Client, Server, serve};
use crate::support::Counter;

#[derive(Clone)]
struct App {
    idem: Idem,
    runs: Counter,
}

/// Answers the status in `x-status` (default 201); `x-big: n` answers an
/// `n`-byte body; `x-broken` a body whose stream fails after its first chunk.
async fn answer(State(app): State<App>, headers: HeaderMap) -> Response {
    let run = app.runs.hit();
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
    };
    let status = header("x-status").map_or(StatusCode::CREATED, |s| {
        StatusCode::from_u16(s as u16).expect("a status")
    });
    if let Some(n) = header("x-big") {
        return (status, [("location", "/orders/big")], "x".repeat(n)).into_response();
    }
    if headers.contains_key("x-broken") {
        let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
            Ok(Bytes::from_static(b"{\"order\":")),
            Err(std::io::Error::other("the database cursor died")),
        ];
        let body = Body::from_stream(futures_util::stream::iter(chunks));
        return (status, body).into_response();
    }
    (status, format!("run {run}")).into_response()
}

async fn start_layer(idem: &Idem, max_stored_body: usize) -> (Server, Client, App) {
    let app = App {
        idem: idem.clone(),
        runs: Counter::default(),
    };
    let router = Router::new()
        .route("/orders", post(answer))
        .layer(layer(idem).max_stored_body(max_stored_body))
        .with_state(app.clone());
    let server = serve(router).await;
    let client = Client::new(&server);
    (server, client, app)
}

async fn post_status(client: &Client, key: &str, status: u16) -> crate::http::support::Answer {
    let s = status.to_string();
    let h: [(&str, &[u8]); 2] = [
        ("idempotency-key", key.as_bytes()),
        ("x-status", s.as_bytes()),
    ];
    client.send(http::Method::POST, "/orders", &h, "{}").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layer_releases_throttling_timeouts_auth_failures_and_keeps_other_4xx() {
    let idem = idem_handle("keep-layer-status");
    let (_s, client, app) = start_layer(&idem, 1024).await;
    for status in [500u16, 503, 408, 425, 429, 401, 403] {
        let key = format!("released-{status}");
        for _ in 0..2 {
            let a = post_status(&client, &key, status).await;
            assert_eq!(a.status.as_u16(), status);
            assert!(!a.is_replay(), "{status} is not kept: {a:?}");
        }
    }
    assert_eq!(app.runs.get(), 14, "every released status ran twice");
    for status in [200u16, 201, 400, 404, 409, 422] {
        let key = format!("kept-{status}");
        let first = post_status(&client, &key, status).await;
        let again = post_status(&client, &key, status).await;
        assert_eq!(again.status.as_u16(), status);
        assert!(
            again.is_replay() && again.body == first.body,
            "{status} is kept: {again:?}"
        );
    }
    assert_eq!(app.runs.get(), 20, "every kept status ran once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layer_body_over_the_limit_ends_the_key_and_a_repeat_is_a_problem() {
    let idem = idem_handle("keep-layer-big");
    let (_s, client, app) = start_layer(&idem, 1024).await;
    let h: [(&str, &[u8]); 2] = [("idempotency-key", b"big-1"), ("x-big", b"100000")];
    let first = client.send(http::Method::POST, "/orders", &h, "{}").await;
    assert_eq!(
        (first.status, first.body.len()),
        (StatusCode::CREATED, 100_000)
    );
    let again = client.send(http::Method::POST, "/orders", &h, "{}").await;
    again.assert_problem(StatusCode::CONFLICT);
    assert!(again.is_replay());
    assert_eq!(
        again.header("location"),
        Some("/orders/big"),
        "chosen headers kept"
    );
    let p = again.problem();
    assert_eq!(
        (p["original_status"].as_u64(), p["body_limit"].as_u64()),
        (Some(201), Some(1024))
    );
    assert_eq!(p["not_kept"], "over_limit");
    assert_eq!(app.runs.get(), 1, "never a second order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layer_failed_stream_ends_the_key_and_a_repeat_is_a_problem() {
    let idem = idem_handle("keep-layer-broken");
    let (_s, client, app) = start_layer(&idem, 1024).await;
    let h: [(&str, &[u8]); 2] = [("idempotency-key", b"broken-1"), ("x-broken", b"1")];
    // The client sees the failure (the connection is cut), never a whole body.
    match client.send_lossy("/orders", &h).await {
        Ok((status, body)) => {
            assert_eq!(status, StatusCode::CREATED);
            assert!(body.is_err(), "the client sees the failure: {body:?}");
        }
        Err(cut) => println!("no answer: {cut}"),
    }
    let again = client.send(http::Method::POST, "/orders", &h, "").await;
    again.assert_problem(StatusCode::CONFLICT);
    assert_eq!(again.problem()["not_kept"], "stream_failed");
    assert_eq!(app.runs.get(), 1, "never a second order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layer_retry_after_rounds_up() {
    let idem = idem_handle("keep-layer-retry");
    let app = App {
        idem: idem.clone(),
        runs: Counter::default(),
    };
    let slow = |State(app): State<App>| async move {
        app.runs.hit();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        StatusCode::CREATED
    };
    let layer = layer(&idem)
        .reject_concurrent()
        .retry_after(Duration::from_millis(1200));
    let router = Router::new()
        .route("/orders", post(slow))
        .layer(layer)
        .with_state(app.clone());
    let server = serve(router).await;
    let client = Client::new(&server);
    let c = client.clone();
    let first = tokio::spawn(async move { c.post("/orders", "slow-1", "{}").await });
    while app.runs.get() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let busy = client.post("/orders", "slow-1", "{}").await;
    busy.assert_problem(StatusCode::CONFLICT);
    assert_eq!(busy.header("retry-after"), Some("2"), "1.2 s is 2 s, not 1");
    assert_eq!(first.await.unwrap().status, StatusCode::CREATED);
}

/// The service's error: idem's errors answer with the layer's status codes.
#[derive(Debug)]
struct ApiError(idem::Error);

impl From<idem::Error> for ApiError {
    fn from(e: idem::Error) -> Self {
        ApiError(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.0.into_response()
    }
}

/// A handler answering the status in its path, inside `Ok`.
#[idem::idempotent(key = "keep-json:<id>:<status>", lease = "3s", handle = &app.idem)]
async fn json_status(
    State(app): State<App>,
    Path((id, status)): Path<(String, u16)>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    let run = app.runs.hit();
    let status = StatusCode::from_u16(status).expect("a status");
    Ok((status, Json(serde_json::json!({ "id": id, "run": run }))))
}

/// The adapter, with a status and a body size from the path.
#[idem::idempotent(key = "keep-captured:<id>:<status>:<len>", lease = "3s", handle = &app.idem)]
async fn captured(
    State(app): State<App>,
    Path((id, status, len)): Path<(String, u16, usize)>,
) -> Result<StoredResponse, ApiError> {
    let run = app.runs.hit();
    let status = StatusCode::from_u16(status).expect("a status");
    let body = format!("{id} run {run} ").repeat(len.max(1)).into_bytes();
    Ok(StoredResponse::capture((status, [("location", format!("/r/{id}"))], body)).await?)
}

async fn start_attribute() -> (Server, Client, App) {
    let app = App {
        idem: idem_handle("keep-attr"),
        runs: Counter::default(),
    };
    let router = Router::new()
        .route("/json/{id}/{status}", post(json_status))
        .route("/captured/{id}/{status}/{len}", post(captured))
        .with_state(app.clone());
    let server = serve(router).await;
    let client = Client::new(&server);
    (server, client, app)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attribute_releases_5xx_and_429_returned_inside_ok() {
    let (_s, client, app) = start_attribute().await;
    let post = |path: String| {
        let client = client.clone();
        async move { client.send(http::Method::POST, &path, &[], "").await }
    };
    for status in [500u16, 503, 429, 401] {
        for path in [
            format!("/json/a/{status}"),
            format!("/captured/a/{status}/1"),
        ] {
            let first = post(path.clone()).await;
            let again = post(path.clone()).await;
            assert_eq!(
                (first.status.as_u16(), again.status.as_u16()),
                (status, status)
            );
            assert!(
                !again.is_replay() && again.body != first.body,
                "{path}: ran again"
            );
        }
    }
    assert_eq!(app.runs.get(), 16, "every released response ran twice");
    for path in ["/json/b/201", "/json/b/404", "/captured/b/202/1"] {
        let first = post(path.to_owned()).await;
        let again = post(path.to_owned()).await;
        assert!(
            again.is_replay() && again.body == first.body,
            "{path}: kept"
        );
    }
    assert_eq!(app.runs.get(), 19);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_over_the_limit_ends_the_key_and_a_repeat_is_a_problem() {
    let (_s, client, app) = start_attribute().await;
    // "c run 1 " is 8 bytes: 40,000 of them are over the 256 KiB limit.
    let path = "/captured/c/201/40000";
    let first = client.send(http::Method::POST, path, &[], "").await;
    assert_eq!(
        (first.status, first.body.len()),
        (StatusCode::CREATED, 320_000)
    );
    let again = client.send(http::Method::POST, path, &[], "").await;
    again.assert_problem(StatusCode::CONFLICT);
    assert_eq!(again.header("location"), Some("/r/c"));
    assert_eq!(again.problem()["original_status"], 201);
    assert_eq!(app.runs.get(), 1, "never a second run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attribute_problem_for_an_unkept_body_reaches_a_second_process() {
    // The record is an ordinary guarded result: a second handle on the same
    // store (another process) answers the same problem without running.
    let store: Arc<dyn idem::Store> = Arc::new(idem::MemoryStore::new());
    let ns = crate::support::unique_ns("keep-two");
    let handle = || {
        Idem::builder()
            .shared_store(store.clone())
            .namespace(&ns)
            .build()
            .unwrap()
    };
    let (a, b) = (handle(), handle());
    let (_s1, c1, app1) = start_layer(&a, 16).await;
    let (_s2, c2, app2) = start_layer(&b, 16).await;
    let h: [(&str, &[u8]); 2] = [("idempotency-key", b"two-1"), ("x-big", b"64")];
    let first = c1.send(http::Method::POST, "/orders", &h, "{}").await;
    assert_eq!(first.body.len(), 64);
    c2.send(http::Method::POST, "/orders", &h, "{}")
        .await
        .assert_problem(StatusCode::CONFLICT);
    assert_eq!(app1.runs.get() + app2.runs.get(), 1);
}
