//! The `Idempotency-Key` layer over real HTTP on loopback: every status path of
//! the layer (module docs of `idem::http`), pinned one test each.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use http::{HeaderName, Method, StatusCode, header};
use idem::http::IdempotencyLayer;
use idem::{Idem, MemoryStore};

use crate::http::support::{Client, Server, serve};
use crate::support::{Counter, FULL_BUDGET_LEASE, handle};

/// The business behind the test routes: counts handler runs ("orders").
#[derive(Default)]
pub struct Orders {
    pub runs: Counter,
    pub delay: Duration,
    /// Answer 500 once.
    pub fail_once: AtomicBool,
    /// Answer with a body of this many bytes.
    pub big_body: Option<usize>,
}

/// Creates an order: 201, `Location`, `X-Order-Id` (replayed when configured),
/// `X-Trace` (never replayed), a JSON body echoing the request.
async fn create(State(orders): State<Arc<Orders>>, body: Bytes) -> Response {
    let n = orders.runs.hit();
    tokio::time::sleep(orders.delay).await;
    if orders.fail_once.swap(false, Ordering::SeqCst) {
        return (StatusCode::INTERNAL_SERVER_ERROR, "database hiccup").into_response();
    }
    if let Some(len) = orders.big_body {
        return (StatusCode::OK, "x".repeat(len)).into_response();
    }
    let json = serde_json::json!({ "order": n, "echo": String::from_utf8_lossy(&body) });
    let headers = [
        (header::LOCATION, format!("/orders/{n}")),
        (HeaderName::from_static("x-order-id"), n.to_string()),
        (
            HeaderName::from_static("x-trace"),
            uuid::Uuid::new_v4().to_string(),
        ),
    ];
    (StatusCode::CREATED, headers, axum::Json(json)).into_response()
}

pub fn idem_handle(prefix: &str) -> Idem {
    handle(Arc::new(MemoryStore::new()), prefix)
}

/// The layer the tests share: a full-budget lease, `X-Order-Id` replayed.
pub fn layer(idem: &Idem) -> IdempotencyLayer {
    IdempotencyLayer::new(idem.clone())
        .scene("orders")
        .lease(FULL_BUDGET_LEASE)
        .replay_header(HeaderName::from_static("x-order-id"))
}

/// `/orders` and `/orders/alt` behind one layer (a router-wide layer: any
/// tower service), `/open` behind an optional one.
pub async fn start(orders: Orders, layer: IdempotencyLayer) -> (Server, Client, Arc<Orders>) {
    let orders = Arc::new(orders);
    let optional = layer.clone().scene("open").optional();
    let guarded = Router::new()
        .route("/orders", post(create).get(|| async { "listing" }))
        .route("/orders/alt", post(create))
        .layer(layer);
    let open = Router::new().route("/open", post(create)).layer(optional);
    let app = guarded.merge(open).with_state(orders.clone());
    let server = serve(app).await;
    let client = Client::new(&server);
    (server, client, orders)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_key_is_400_unless_optional() {
    let idem = idem_handle("http-missing");
    let (_s, client, orders) = start(Orders::default(), layer(&idem)).await;
    let a = client.send(Method::POST, "/orders", &[], "{}").await;
    a.assert_problem(StatusCode::BAD_REQUEST);
    assert_eq!(orders.runs.get(), 0, "the handler did not run");
    // Safe methods pass through without a key.
    let get = client.send(Method::GET, "/orders", &[], "").await;
    assert_eq!((get.status, get.body.as_str()), (StatusCode::OK, "listing"));
    // An optional route runs unguarded without a key: twice is twice.
    for _ in 0..2 {
        let a = client.send(Method::POST, "/open", &[], "{}").await;
        assert_eq!(a.status, StatusCode::CREATED);
        assert!(!a.is_replay());
    }
    assert_eq!(orders.runs.get(), 2);
    assert_eq!(idem.stats().calls(), 0, "unguarded requests are not calls");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_or_oversize_key_is_400() {
    let idem = idem_handle("http-malformed");
    let (_s, client, orders) = start(Orders::default(), layer(&idem).max_key_len(64)).await;
    let long = "k".repeat(65);
    let bad: [&[&[u8]]; 5] = [
        &[b""],
        &[b"has space"],
        &[b"caf\xc3\xa9"],
        &[long.as_bytes()],
        &[b"one", b"two"],
    ];
    for values in bad {
        let headers: Vec<(&str, &[u8])> = values.iter().map(|v| ("idempotency-key", *v)).collect();
        let a = client.send(Method::POST, "/orders", &headers, "{}").await;
        a.assert_problem(StatusCode::BAD_REQUEST);
        assert!(a.body.contains("Idempotency-Key"), "{}", a.body);
    }
    // The longest accepted key works.
    let ok = client.post("/orders", &"k".repeat(64), "{}").await;
    assert_eq!(ok.status, StatusCode::CREATED);
    assert_eq!(orders.runs.get(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_carries_status_body_and_chosen_headers() {
    let idem = idem_handle("http-replay");
    let (_s, client, orders) = start(Orders::default(), layer(&idem)).await;
    let first = client.post("/orders", "key-1", r#"{"sku":"A"}"#).await;
    assert_eq!(first.status, StatusCode::CREATED);
    assert!(!first.is_replay());
    assert!(
        first.header("x-trace").is_some(),
        "the first answer keeps every header"
    );
    for _ in 0..3 {
        let again = client.post("/orders", "key-1", r#"{"sku":"A"}"#).await;
        assert_eq!(again.status, StatusCode::CREATED);
        assert!(again.is_replay(), "{again:?}");
        assert_eq!(again.body, first.body);
        for h in ["location", "content-type", "x-order-id"] {
            assert_eq!(again.header(h), first.header(h), "{h}");
        }
        assert_eq!(
            again.header("x-trace"),
            None,
            "headers not chosen are not stored"
        );
    }
    assert_eq!(orders.runs.get(), 1);
    let s = idem.stats();
    assert_eq!((s.count("executed"), s.count("replayed")), (1, 3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_payload_same_key_is_422() {
    let idem = idem_handle("http-mismatch");
    let (_s, client, orders) = start(Orders::default(), layer(&idem)).await;
    let first = client.post("/orders", "key-2", r#"{"sku":"A"}"#).await;
    assert_eq!(first.status, StatusCode::CREATED);
    client
        .post("/orders", "key-2", r#"{"sku":"B"}"#)
        .await
        .assert_problem(StatusCode::UNPROCESSABLE_ENTITY);
    client
        .post("/orders/alt", "key-2", r#"{"sku":"A"}"#)
        .await
        .assert_problem(StatusCode::UNPROCESSABLE_ENTITY);
    let put: [(&str, &[u8]); 1] = [("idempotency-key", b"key-2")];
    client
        .send(Method::PUT, "/orders", &put, r#"{"sku":"A"}"#)
        .await
        .assert_problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(orders.runs.get(), 1, "a mismatch never runs the handler");
    assert_eq!(idem.stats().count("mismatch"), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_progress_is_409_with_retry_after() {
    let idem = idem_handle("http-409");
    let orders = Orders {
        delay: Duration::from_millis(1500),
        ..Orders::default()
    };
    let layer = layer(&idem)
        .reject_concurrent()
        .retry_after(Duration::from_secs(2));
    let (_s, client, orders) = start(orders, layer).await;
    let c = client.clone();
    let first = tokio::spawn(async move { c.post("/orders", "key-3", "{}").await });
    while orders.runs.get() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let busy = client.post("/orders", "key-3", "{}").await;
    busy.assert_problem(StatusCode::CONFLICT);
    assert_eq!(busy.header("retry-after"), Some("2"));
    let first = first.await.unwrap();
    assert_eq!(first.status, StatusCode::CREATED);
    let later = client.post("/orders", "key-3", "{}").await;
    assert!(later.is_replay() && later.body == first.body);
    assert_eq!(orders.runs.get(), 1);
    assert_eq!(idem.stats().count("in_progress"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_error_is_released_and_a_retry_executes() {
    let idem = idem_handle("http-500");
    let orders = Orders {
        fail_once: AtomicBool::new(true),
        ..Orders::default()
    };
    let (_s, client, orders) = start(orders, layer(&idem)).await;
    let failed = client.post("/orders", "key-4", "{}").await;
    assert_eq!(failed.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(failed.body, "database hiccup");
    let retry = client.post("/orders", "key-4", "{}").await;
    assert_eq!(retry.status, StatusCode::CREATED);
    assert!(!retry.is_replay(), "the retry ran the handler");
    let third = client.post("/orders", "key-4", "{}").await;
    assert!(third.is_replay() && third.body == retry.body);
    assert_eq!(orders.runs.get(), 2);
    assert_eq!(idem.stats().count("released"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_body_over_the_limit_is_413_and_not_stored() {
    let idem = idem_handle("http-413");
    let (_s, client, orders) = start(Orders::default(), layer(&idem).max_request_body(64)).await;
    let big = format!(r#"{{"note":"{}"}}"#, "x".repeat(64));
    client
        .post("/orders", "key-5", &big)
        .await
        .assert_problem(StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(orders.runs.get(), 0);
    assert_eq!(idem.stats().calls(), 0, "no claim was made");
    // Nothing was stored: the same key with a body within the limit executes.
    let ok = client.post("/orders", "key-5", "{}").await;
    assert_eq!(ok.status, StatusCode::CREATED);
    assert!(!ok.is_replay());
    assert_eq!(orders.runs.get(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_scoped_per_user() {
    let idem = idem_handle("http-scope");
    let layer =
        layer(&idem).scope_by(|req| req.headers.get("x-user")?.to_str().ok().map(str::to_owned));
    let (_s, client, orders) = start(Orders::default(), layer).await;
    let send = |user: &'static str| {
        let client = client.clone();
        async move {
            let h: [(&str, &[u8]); 2] = [("idempotency-key", b"same"), ("x-user", user.as_bytes())];
            client.send(Method::POST, "/orders", &h, "{}").await
        }
    };
    assert!(!send("alice").await.is_replay());
    assert!(!send("bob").await.is_replay());
    assert!(send("alice").await.is_replay());
    assert_eq!(orders.runs.get(), 2);
    // `scope_by` returning `None`: every such request shares one key space.
    let anonymous = client.post("/orders", "same", "{}").await;
    assert!(!anonymous.is_replay());
    assert!(client.post("/orders", "same", "{}").await.is_replay());
    assert_eq!(orders.runs.get(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_down_is_503() {
    let store = Arc::new(idem::FaultyStore::new(MemoryStore::new()));
    store.set_unavailable(true);
    let idem = handle(store.clone(), "http-503");
    let (_s, client, orders) = start(Orders::default(), layer(&idem)).await;
    let a = client.post("/orders", "key-7", "{}").await;
    a.assert_problem(StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(orders.runs.get(), 0, "fail closed");
    store.set_unavailable(false);
}

/// Two handles on one store are two processes: the second replays what the
/// first stored (the stored response is an ordinary guarded result).
async fn replay_across_processes(stores: [Arc<dyn idem::Store>; 2], ns: &str) {
    let mut servers = Vec::new();
    let mut handles = Vec::new();
    for store in stores {
        let idem = Idem::builder()
            .shared_store(store)
            .namespace(ns)
            .build()
            .unwrap();
        servers.push(start(Orders::default(), layer(&idem).ttl(Duration::from_secs(60))).await);
        handles.push(idem);
    }
    let a = servers[0].1.post("/orders", "key-8", "{}").await;
    let b = servers[1].1.post("/orders", "key-8", "{}").await;
    assert_eq!(
        (a.status, b.status),
        (StatusCode::CREATED, StatusCode::CREATED)
    );
    assert!(!a.is_replay() && b.is_replay());
    assert_eq!(a.body, b.body);
    assert_eq!(a.header("location"), b.header("location"));
    assert_eq!(servers[0].2.runs.get() + servers[1].2.runs.get(), 1);
    // The layer's key: scene, scope (none here), the client's key.
    let key = handles[0].key("orders", &[&"", &"key-8"]);
    assert!(
        handles[0].forget(&key).await.expect("forget"),
        "the record was there"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_across_processes_on_sqlite() {
    let dir = crate::support::tempdir::TempDir::new();
    let path = dir.path().join("idem.db");
    let mut stores: Vec<Arc<dyn idem::Store>> = Vec::new();
    for _ in 0..2 {
        let store = idem::sql::SqlStore::open(&path).await.expect("open sqlite");
        store.migrate().await.expect("migrate");
        stores.push(Arc::new(store));
    }
    let stores = [stores.remove(0), stores.remove(0)];
    replay_across_processes(stores, &crate::support::unique_ns("http-sqlite")).await;
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_across_processes_on_redis() {
    let connect = || idem::store::redis::RedisStore::connect("redis://127.0.0.1:6379");
    let a = connect().await.expect("Redis on 127.0.0.1:6379");
    let b = connect().await.expect("Redis on 127.0.0.1:6379");
    // A fresh namespace; the records expire after the layer's 60 s ttl.
    replay_across_processes(
        [Arc::new(a), Arc::new(b)],
        &crate::support::unique_ns("http-redis"),
    )
    .await;
}
