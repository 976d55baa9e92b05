//! Replayed headers (issue 26 item 2): never `Set-Cookie`, hop-by-hop headers,
//! `Date` or lengths, on the layer and through `capture`; the allow-list's
//! defaults and the user's additions; `Idempotent-Replayed: true` on the
//! layer's and the attribute's replays with no extra layer.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use http::{HeaderName, StatusCode};
use idem::Idem;
use idem::http::StoredResponse;

use crate::http::statuses::{idem_handle, layer};
use crate::http::support::{Client, serve};
use crate::support::Counter;

#[derive(Clone)]
struct App {
    idem: Idem,
    runs: Counter,
}

/// A first response with a session cookie, cache headers and a custom one.
fn with_headers(run: usize) -> impl IntoResponse {
    let headers = [
        ("set-cookie", format!("session=secret-{run}; HttpOnly")),
        ("etag", format!("\"v{run}\"")),
        ("cache-control", "private, max-age=60".to_owned()),
        ("x-order-id", run.to_string()),
        ("x-trace", format!("trace-{run}")),
    ];
    (StatusCode::CREATED, headers, format!("order {run}"))
}

async fn plain(State(app): State<App>) -> Response {
    with_headers(app.runs.hit()).into_response()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layer_replays_allow_listed_headers_but_never_set_cookie() {
    let idem = idem_handle("headers-layer");
    let app = App {
        idem: idem.clone(),
        runs: Counter::default(),
    };
    // Even allow-listed by the user, a cookie is never stored.
    let layer = layer(&idem).replay_header(http::header::SET_COOKIE);
    let router = Router::new()
        .route("/orders", post(plain))
        .layer(layer)
        .with_state(app.clone());
    let server = serve(router).await;
    let client = Client::new(&server);
    let first = client.post("/orders", "h-1", "{}").await;
    assert!(
        first.header("set-cookie").is_some(),
        "the first answer keeps every header"
    );
    let again = client.post("/orders", "h-1", "{}").await;
    assert!(again.is_replay());
    assert_eq!(again.header("set-cookie"), None, "{again:?}");
    for h in ["etag", "cache-control", "x-order-id", "content-type"] {
        assert_eq!(again.header(h), first.header(h), "{h} is replayed");
    }
    assert_eq!(again.header("x-trace"), None, "not on the allow-list");
    // The server's own `Date` and the body's length, not the first response's.
    assert_eq!(again.header("content-length"), Some("7"));
    assert_eq!(app.runs.get(), 1);
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

#[idem::idempotent(key = "headers-captured:<id>", lease = "3s", handle = &app.idem)]
async fn captured(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<StoredResponse, ApiError> {
    let _ = &id;
    Ok(StoredResponse::capture(with_headers(app.runs.hit())).await?)
}

#[idem::idempotent(key = "headers-json:<id>", lease = "3s", handle = &app.idem)]
async fn json(State(app): State<App>, Path(id): Path<String>) -> Result<Json<String>, ApiError> {
    Ok(Json(format!("{id} run {}", app.runs.hit())))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_never_replays_set_cookie_and_attribute_replays_are_marked_without_a_layer() {
    let app = App {
        idem: idem_handle("headers-attr"),
        runs: Counter::default(),
    };
    // No `MarkReplaysLayer`: the attribute marks its own replays.
    let router = Router::new()
        .route("/captured/{id}", post(captured))
        .route("/json/{id}", post(json))
        .with_state(app.clone());
    let server = serve(router).await;
    let client = Client::new(&server);
    let post = |path: &'static str| {
        let client = client.clone();
        async move { client.send(http::Method::POST, path, &[], "").await }
    };
    let first = post("/captured/c1").await;
    assert!(first.header("set-cookie").is_some() && !first.is_replay());
    let again = post("/captured/c1").await;
    assert!(again.is_replay(), "{again:?}");
    assert_eq!(again.header("set-cookie"), None, "{again:?}");
    assert_eq!(again.header("etag"), first.header("etag"));
    assert_eq!(
        again.header("x-order-id"),
        None,
        "not on capture's allow-list"
    );
    let a = post("/json/j1").await;
    let b = post("/json/j1").await;
    assert!(!a.is_replay() && b.is_replay(), "{b:?}");
    assert_eq!(a.body, b.body);
    assert_eq!(app.runs.get(), 2);
    // The header name the layer uses is the one the attribute uses.
    assert_eq!(
        idem::http::IDEMPOTENT_REPLAYED,
        HeaderName::from_static("idempotent-replayed")
    );
}
