//! `#[idempotent]` on axum handlers: extractor patterns in the signature,
//! placeholders naming the identifiers they bind, axum return types stored and
//! replayed, `Idempotent-Replayed: true` from `MarkReplaysLayer`.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{FromRequestParts, Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use http::StatusCode;
use http::request::Parts;
use idem::Idem;
use idem::http::{MarkReplaysLayer, StoredResponse};
use serde::{Deserialize, Serialize};
use tokio::sync::Barrier;

use crate::http::statuses::idem_handle;
use crate::http::support::{Answer, Client, Server, serve};
use crate::support::Counter;

#[derive(Clone)]
struct App {
    idem: Idem,
    runs: Counter,
}

#[derive(Debug, Serialize, Deserialize)]
struct CreateOrder {
    order_no: String,
    amount: i64,
}

#[derive(Debug, Serialize, Deserialize)]
struct Order {
    run: usize,
    order_no: String,
    amount: i64,
}

/// The caller, from `X-User-Id` (what an auth layer would provide).
struct User {
    id: String,
}

impl<S: Send + Sync> FromRequestParts<S> for User {
    type Rejection = StatusCode;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, StatusCode> {
        let id = parts
            .headers
            .get("x-user-id")
            .ok_or(StatusCode::UNAUTHORIZED)?;
        let id = id.to_str().map_err(|_| StatusCode::UNAUTHORIZED)?;
        Ok(User { id: id.to_owned() })
    }
}

/// The service's error: idem's errors answer with the layer's status codes.
#[derive(Debug, thiserror::Error)]
enum ApiError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::Idem(e) => e.into_response(),
        }
    }
}

#[idem::idempotent(key = "order-create:<user.id>:<req.order_no>", fingerprint = [req],
                   lease = "3s", handle = &app.idem)]
async fn create_order(
    State(app): State<App>,
    user: User,
    Json(req): Json<CreateOrder>,
) -> Result<(StatusCode, Json<Order>), ApiError> {
    let run = app.runs.hit();
    let _ = &user;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let order = Order {
        run,
        order_no: req.order_no,
        amount: req.amount,
    };
    Ok((StatusCode::CREATED, Json(order)))
}

#[idem::idempotent(key = "order-get:<order_no>", lease = "3s", handle = &app.idem)]
async fn confirm(
    State(app): State<App>,
    Path(order_no): Path<String>,
) -> Result<Json<Order>, ApiError> {
    let run = app.runs.hit();
    Ok(Json(Order {
        run,
        order_no,
        amount: 0,
    }))
}

/// The adapter for a handler that would return `impl IntoResponse`.
#[idem::idempotent(key = "refund:<refund_id>", lease = "3s", handle = &app.idem)]
async fn refund(
    State(app): State<App>,
    Path(refund_id): Path<String>,
) -> Result<StoredResponse, ApiError> {
    let run = app.runs.hit();
    let location = format!("/refunds/{refund_id}");
    let response = (
        StatusCode::ACCEPTED,
        [("location", location)],
        format!("refund run {run}"),
    );
    Ok(StoredResponse::capture(response).await?)
}

async fn start() -> (Server, Client, App) {
    let app = App {
        idem: idem_handle("http-macro"),
        runs: Counter::default(),
    };
    let router = Router::new()
        .route("/orders", post(create_order))
        .route("/orders/{order_no}/confirm", post(confirm))
        .route("/refunds/{refund_id}", post(refund))
        .layer(MarkReplaysLayer)
        .with_state(app.clone());
    let server = serve(router).await;
    let client = Client::new(&server);
    (server, client, app)
}

async fn order(client: &Client, user: &str, body: &str) -> Answer {
    let h: [(&str, &[u8]); 2] = [
        ("x-user-id", user.as_bytes()),
        ("content-type", b"application/json"),
    ];
    client
        .send(http::Method::POST, "/orders", &h, body.to_owned())
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotated_handler_runs_once_and_marks_replays() {
    let (_s, client, app) = start().await;
    let body = r#"{"order_no":"NO-1","amount":42}"#;
    let first = order(&client, "u1", body).await;
    assert_eq!(first.status, StatusCode::CREATED, "{first:?}");
    assert!(!first.is_replay());
    for _ in 0..3 {
        let again = order(&client, "u1", body).await;
        assert_eq!(again.status, StatusCode::CREATED);
        assert!(again.is_replay(), "{again:?}");
        assert_eq!(again.body, first.body);
    }
    // Another user's order number is another key.
    assert!(!order(&client, "u2", body).await.is_replay());
    // Same key, other payload: 422 from `idem::Error`'s `IntoResponse`.
    let other = order(&client, "u1", r#"{"order_no":"NO-1","amount":43}"#).await;
    other.assert_problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.runs.get(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotated_handler_under_concurrent_copies() {
    let (_s, client, app) = start().await;
    let barrier = Arc::new(Barrier::new(20));
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (client, barrier) = (client.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                order(&client, "u9", r#"{"order_no":"NO-9","amount":1}"#).await
            })
        })
        .collect();
    let mut replays = 0;
    for t in tasks {
        let a = t.await.unwrap();
        assert_eq!(a.status, StatusCode::CREATED);
        replays += usize::from(a.is_replay());
    }
    assert_eq!((app.runs.get(), replays), (1, 19));
    assert!(app.idem.stats().count("waited") >= 1, "copies overlapped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_and_adapter_returns_replay() {
    let (_s, client, app) = start().await;
    let post = |path: &'static str| {
        let client = client.clone();
        async move { client.send(http::Method::POST, path, &[], "").await }
    };
    let a = post("/orders/NO-5/confirm").await;
    let b = post("/orders/NO-5/confirm").await;
    assert_eq!((a.status, b.status), (StatusCode::OK, StatusCode::OK));
    assert_eq!(a.body, b.body);
    assert!(!a.is_replay() && b.is_replay());
    let r1 = post("/refunds/R-1").await;
    let r2 = post("/refunds/R-1").await;
    assert_eq!(
        (r1.status, r2.status),
        (StatusCode::ACCEPTED, StatusCode::ACCEPTED)
    );
    assert_eq!(
        (r1.body.as_str(), r2.body.as_str()),
        ("refund run 2", "refund run 2")
    );
    assert_eq!(r2.header("location"), Some("/refunds/R-1"));
    assert!(!r1.is_replay() && r2.is_replay());
    assert_eq!(app.runs.get(), 2);
}
