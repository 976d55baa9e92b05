//! `Idempotency-Key` parsing (issue 26 item 3, issue 32 item 1): the RFC 8941
//! string and the bare form are one key; a repeated field, a comma-joined
//! value, a control character or a tab is a `400` problem, on the layer and
//! through the `IdempotencyKey` extractor alike.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use http::{Method, StatusCode};
use idem::Idem;
use idem::http::IdempotencyKey;

use crate::http::statuses::{Orders, idem_handle, layer, start};
use crate::http::support::{Client, serve};
use crate::support::Counter;

/// Every way of sending something that is not one key.
const NOT_ONE_KEY: [&[&[u8]]; 7] = [
    &[b"a,b"],
    &[b"\"a\", \"b\""],
    &[b"a", b"b"],
    &[b"a\tb"],
    &[b"\"a\tb\""],
    &[b"\"a\";p=1"],
    &[b"\"unclosed"],
];

fn key_headers<'a>(values: &[&'a [u8]]) -> Vec<(&'static str, &'a [u8])> {
    values.iter().map(|v| ("idempotency-key", *v)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layer_reads_quoted_and_bare_keys_as_one_key() {
    let idem = idem_handle("keys-layer-sf");
    let (_s, client, orders) = start(Orders::default(), layer(&idem)).await;
    let bare = client.post("/orders", "q-1", "{}").await;
    let quoted = client.post("/orders", "\"q-1\"", "{}").await;
    assert_eq!(bare.status, StatusCode::CREATED);
    assert!(quoted.is_replay() && quoted.body == bare.body, "{quoted:?}");
    let escaped = client.post("/orders", r#""q\"2""#, "{}").await;
    assert!(!escaped.is_replay());
    assert!(client.post("/orders", "q\"2", "{}").await.status == StatusCode::BAD_REQUEST);
    assert_eq!(orders.runs.get(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layer_refuses_repeated_comma_joined_and_control_character_keys() {
    let idem = idem_handle("keys-layer-strict");
    let (_s, client, orders) = start(Orders::default(), layer(&idem)).await;
    for values in NOT_ONE_KEY {
        let h = key_headers(values);
        let a = client.send(Method::POST, "/orders", &h, "{}").await;
        a.assert_problem(StatusCode::BAD_REQUEST);
        assert!(a.body.contains("Idempotency-Key"), "{values:?}: {}", a.body);
    }
    assert_eq!(orders.runs.get(), 0);
    assert_eq!(idem.stats().calls(), 0, "no claim was made");
}

#[derive(Clone)]
struct App {
    idem: Idem,
    runs: Counter,
}

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

/// The headline use without the layer: the extractor's key in the template.
#[idem::idempotent(key = "keys-extract:<key>", lease = "3s", handle = &app.idem)]
async fn create(State(app): State<App>, key: IdempotencyKey) -> Result<Json<String>, ApiError> {
    Ok(Json(format!("order for {key}, run {}", app.runs.hit())))
}

/// An optional key: `None` when absent, still `400` when malformed.
async fn maybe(key: Option<IdempotencyKey>) -> String {
    key.map_or("none".to_owned(), IdempotencyKey::into_inner)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extractor_applies_the_layers_checks_and_answers() {
    let app = App {
        idem: idem_handle("keys-extract"),
        runs: Counter::default(),
    };
    let router = Router::new()
        .route("/orders", post(create))
        .route("/maybe", post(maybe))
        .with_state(app.clone());
    let server = serve(router).await;
    let client = Client::new(&server);
    let missing = client.send(Method::POST, "/orders", &[], "").await;
    missing.assert_problem(StatusCode::BAD_REQUEST);
    assert!(
        missing.body.contains("requires an `Idempotency-Key`"),
        "{}",
        missing.body
    );
    for values in NOT_ONE_KEY {
        let h = key_headers(values);
        let a = client.send(Method::POST, "/orders", &h, "").await;
        a.assert_problem(StatusCode::BAD_REQUEST);
        let b = client.send(Method::POST, "/maybe", &h, "").await;
        b.assert_problem(StatusCode::BAD_REQUEST);
    }
    assert_eq!(app.runs.get(), 0, "a refused key never runs the handler");
    let first = client.post("/orders", "e-1", "").await;
    let again = client.post("/orders", "\"e-1\"", "").await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(again.is_replay() && again.body == first.body, "{again:?}");
    assert_eq!(app.runs.get(), 1);
    let none = client.send(Method::POST, "/maybe", &[], "").await;
    assert_eq!(none.body, "none");
    assert_eq!(client.post("/maybe", "\"m-1\"", "").await.body, "m-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extractor_behind_the_layer_reads_the_layers_key() {
    let idem = idem_handle("keys-behind");
    let runs = Counter::default();
    let r = runs.clone();
    let handler = move |key: IdempotencyKey| {
        let r = r.clone();
        async move { format!("{key} {}", r.hit()) }
    };
    // A layer allowing longer keys than the extractor's own default.
    let router = Router::new()
        .route("/orders", post(handler))
        .layer(layer(&idem).max_key_len(300));
    let server = serve(router).await;
    let client = Client::new(&server);
    let long = "k".repeat(280);
    let a = client.post("/orders", &format!("\"{long}\""), "").await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert!(a.body.starts_with(&long));
    assert_eq!(runs.get(), 1);
}
