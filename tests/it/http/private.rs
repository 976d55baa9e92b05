//! Nothing private leaves the service (issue 26 item 4, issue 32 item 2):
//! problem details name at most the client's own key, never the internal key
//! or a fingerprint; the top-K export shows hashed keys and honest counts.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use http::{Method, StatusCode};
use idem::http::IdempotencyKey;
use idem::{Error, Idem, MemoryStore};

use crate::http::statuses::{Orders, idem_handle, layer, start};
use crate::http::support::{Answer, Client, serve};
use crate::support::{Counter, handle};

/// The rendered key's parts a client must not see: the namespace, the scene,
/// and the fingerprints (hex).
fn assert_private(a: &Answer, idem: &Idem, scene: &str) {
    let ns = idem.key(scene, &[&"x"]);
    let ns = ns
        .as_str()
        .trim_start_matches('{')
        .split(':')
        .next()
        .expect("a namespace");
    assert!(!a.body.contains(ns), "namespace `{ns}` in {}", a.body);
    assert!(
        !a.body.contains(&format!("{scene}:")),
        "scene in {}",
        a.body
    );
    assert!(!a.body.contains("fingerprint"), "fingerprint in {}", a.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layer_problems_name_only_the_clients_key() {
    let idem = idem_handle("private-layer");
    let (_s, client, _orders) = start(Orders::default(), layer(&idem)).await;
    client
        .post("/orders", "client-key-1", r#"{"sku":"A"}"#)
        .await;
    let other = client
        .post("/orders", "client-key-1", r#"{"sku":"B"}"#)
        .await;
    other.assert_problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_private(&other, &idem, "orders");
    assert!(
        other.body.contains("client-key-1"),
        "the client's own key: {}",
        other.body
    );
    // Opted in for debugging: the internal key and fingerprints.
    let (_s2, debug, _) = start(Orders::default(), layer(&idem).problem_raw_keys(true)).await;
    debug
        .post("/orders", "client-key-2", r#"{"sku":"A"}"#)
        .await;
    let raw = debug
        .post("/orders", "client-key-2", r#"{"sku":"B"}"#)
        .await;
    assert!(raw.body.contains("fingerprint"), "{}", raw.body);
}

#[derive(Clone)]
struct App {
    idem: Idem,
    runs: Counter,
}

#[derive(Debug)]
struct ApiError(Error);

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.0.into_response()
    }
}

#[idem::idempotent(key = "private-attr:<key>", fingerprint = [body], lease = "3s",
                   handle = &app.idem)]
async fn create(
    State(app): State<App>,
    key: IdempotencyKey,
    body: String,
) -> Result<Json<usize>, ApiError> {
    let _ = (&key, &body);
    Ok(Json(app.runs.hit()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attribute_problems_name_no_internal_key() {
    let app = App {
        idem: idem_handle("private-attr"),
        runs: Counter::default(),
    };
    let router = Router::new()
        .route("/orders", post(create))
        .with_state(app.clone());
    let server = serve(router).await;
    let client = Client::new(&server);
    client.post("/orders", "k-1", "first").await;
    let other = client.post("/orders", "k-1", "second").await;
    other.assert_problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_private(&other, &app.idem, "private-attr");
    assert_eq!(app.runs.get(), 1);
    // The debugging answer carries them.
    let e = Error::PayloadMismatch {
        key: "ns:private-attr:k-1".into(),
        stored: "ab".into(),
        given: "cd".into(),
    };
    let r = idem::http::debug_problem(&e);
    let body = http_body_util::BodyExt::collect(r.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert!(String::from_utf8_lossy(&body).contains("ns:private-attr:k-1"));
}

/// 5,000 keys sent at most 5 times each and one key sent 500 times, through
/// real guarded calls: the export lists only the hot key, by hash, with its
/// guaranteed count (the raw Space-Saving counts of cold keys are in the
/// hundreds by then).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_k_export_shows_only_the_hot_key_hashed() {
    let idem = handle(Arc::new(MemoryStore::new()), "private-topk");
    let call = |key: String| {
        let idem = &idem;
        async move {
            idem.guard("orders", &[&key])
                .run(|| async { Ok::<_, Error>(1u8) })
                .await
                .expect("guarded call");
        }
    };
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut sends: Vec<String> = Vec::new();
    for k in 0..5_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for _ in 0..=(x % 5) {
            sends.push(format!("cold-{k}"));
        }
    }
    // Spread the hot key's 500 sends over the whole stream, and shuffle.
    for i in 0..500 {
        sends.insert(i * sends.len() / 500, "hot".to_owned());
    }
    for i in (1..sends.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        sends.swap(i, (x % (i as u64 + 1)) as usize);
    }
    for key in sends {
        call(key).await;
    }
    let stats = idem.stats();
    let noisy = stats
        .top_keys
        .iter()
        .filter(|k| k.key.contains("cold"))
        .map(|k| k.count)
        .max();
    assert!(
        noisy.unwrap_or(0) > 5,
        "the raw counts of cold keys are noise: {noisy:?}"
    );
    let text = idem::observe::render_top_keys(&stats, 10);
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let hot = idem.key("orders", &[&"hot"]);
    let hash = idem::observe::key_hash(hot.as_str()).to_string();
    assert_eq!(lines.len(), 1, "only the hot key:\n{text}");
    assert!(lines[0].contains(&format!("key=\"{hash}\"")), "{text}");
    let value: u64 = lines[0].rsplit(' ').next().unwrap().parse().unwrap();
    assert!(
        (300..=499).contains(&value),
        "guaranteed count of 499 replays: {value}"
    );
    assert!(
        !text.contains("hot") && !text.contains("cold"),
        "no raw key: {text}"
    );
    let _ = Method::GET;
}
