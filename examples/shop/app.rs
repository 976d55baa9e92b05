//! The shop service: an axum router over idem, one route per technique that
//! exists today, and `/metrics`. `main.rs` serves it; `--demo` and the tests
//! (`tests/it/http_shop.rs`) build the same router from here.
//!
//! | route | technique |
//! |---|---|
//! | `POST /orders` | `#[idempotent]` on the handler (key: user + `Idempotency-Key`), unique index `uk_orders_order_no` as backstop, `degrade = "backstop"` |
//! | `GET /orders/{order_no}` | read |
//! | `POST /payments/callback` | state machine `WAIT_PAY -> PAY_SUCCESS` (`#[state_transition]`) + unique payment number |
//! | `GET /forms/feedback`, `POST /forms/feedback` | one-time token (`Idem::tokens()`) |
//! | `POST /coupons` | the `Idempotency-Key` layer (`IdempotencyLayer`) |
//! | `GET /metrics` | Prometheus text, plus the seed's three figures from `Idem::stats()` |
//!
//! Inventory deduction (optimistic lock) and refunds (pessimistic lock + refund
//! id) belong to the lock helpers of issue 12; their routes are left out until
//! those land.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::{FromRequestParts, Path, State};
use axum::http::{StatusCode, request::Parts};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use idem::http::{IdempotencyLayer, MarkReplaysLayer};
use idem::{Idem, Transition};
use serde::{Deserialize, Serialize};
use sqlx::SqlitePool;

#[path = "store.rs"]
mod store;
pub(crate) use store::{Backends, IdemStore, fresh_namespace, open};

/// The shop's shared state.
pub(crate) type Shop = Arc<ShopState>;

pub(crate) struct ShopState {
    pub(crate) idem: Idem,
    pub(crate) db: SqlitePool,
    /// Renders the process's metrics (`None`: `/metrics` shows only idem's figures).
    pub(crate) prometheus: Option<metrics_exporter_prometheus::PrometheusHandle>,
    /// Runs of the order handler's body (the demo's "body runs").
    pub(crate) order_runs: AtomicUsize,
    /// The demo's round 3: the next order times out after its insert committed.
    pub(crate) time_out_after_insert: AtomicBool,
    /// The demo's round 4: takes the idempotency store down (`true`) or up.
    pub(crate) outage: Box<dyn Fn(bool) + Send + Sync>,
    /// Which stores serve the shop (printed at start-up).
    pub(crate) backends: Backends,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Order {
    pub(crate) id: i64,
    pub(crate) order_no: String,
    pub(crate) amount: i64,
    pub(crate) status: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CreateOrder {
    pub(crate) amount: i64,
}

/// The caller, from `X-User-Id` (what an auth layer would provide).
pub(crate) struct User {
    pub(crate) id: u64,
}

/// The client's `Idempotency-Key` (the request id of the seed's key design).
pub(crate) struct RequestId(pub(crate) String);

impl<S: Send + Sync> FromRequestParts<S> for User {
    type Rejection = ShopError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ShopError> {
        let id = parts.headers.get("x-user-id").and_then(|v| v.to_str().ok());
        let id = id.and_then(|v| v.parse().ok());
        id.map(|id| User { id })
            .ok_or(ShopError::BadRequest("send `X-User-Id: <number>`"))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for RequestId {
    type Rejection = ShopError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ShopError> {
        let key = parts
            .headers
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok());
        match key {
            Some(k) if !k.is_empty() && k.len() <= 64 => Ok(RequestId(k.to_owned())),
            _ => Err(ShopError::BadRequest(
                "send `Idempotency-Key: <1-64 characters>`",
            )),
        }
    }
}

/// The service's errors; idem's answer with the layer's status codes.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ShopError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("payment gateway timed out")]
    Timeout,
    #[error("{0}")]
    BadRequest(&'static str),
}

impl IntoResponse for ShopError {
    fn into_response(self) -> Response {
        let (status, title) = match self {
            ShopError::Idem(e) => return e.into_response(),
            ShopError::Db(_) => (StatusCode::INTERNAL_SERVER_ERROR, "database error"),
            ShopError::Timeout => (StatusCode::GATEWAY_TIMEOUT, "payment gateway timed out"),
            ShopError::BadRequest(why) => (StatusCode::BAD_REQUEST, why),
        };
        idem::http::problem(status, title, "retry with the same Idempotency-Key")
    }
}

/// Creates an order once per (user, request id), whatever the retries. The
/// constrained insert is the body's first effect (required by `degrade`).
#[idem::idempotent(
    key = "order-create:<user.id>:<req_id.0>",
    fingerprint = [req],
    ttl = "24h",
    lease = "10s",
    backstop = "uk_orders_order_no",
    on_conflict = find_order,
    degrade = "backstop",
    handle = &shop.idem
)]
pub(crate) async fn create_order(
    State(shop): State<Shop>,
    user: User,
    req_id: RequestId,
    Json(req): Json<CreateOrder>,
) -> Result<(StatusCode, Json<Order>), ShopError> {
    shop.order_runs.fetch_add(1, Ordering::SeqCst);
    let order_no = format!("{}-{}", user.id, req_id.0);
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO orders (order_no, user_id, amount, status) VALUES (?, ?, ?, 'WAIT_PAY') RETURNING id",
    )
    .bind(&order_no)
    .bind(user.id as i64)
    .bind(req.amount)
    .fetch_one(&shop.db)
    .await?;
    // Slow enough that concurrent copies really overlap.
    tokio::time::sleep(Duration::from_millis(50)).await;
    if shop.time_out_after_insert.swap(false, Ordering::SeqCst) {
        return Err(ShopError::Timeout); // committed, but the client saw a failure
    }
    let order = Order {
        id,
        order_no,
        amount: req.amount,
        status: "WAIT_PAY".into(),
    };
    Ok((StatusCode::CREATED, Json(order)))
}

/// After a unique violation on `uk_orders_order_no`: the order that exists.
/// Receives every bound parameter by reference; uses the pool, not the
/// failed statement's connection.
async fn find_order(
    shop: &Shop,
    user: &User,
    req_id: &RequestId,
    _req: &CreateOrder,
) -> Result<(StatusCode, Json<Order>), ShopError> {
    let order = load_order(shop, &format!("{}-{}", user.id, req_id.0)).await?;
    Ok((StatusCode::CREATED, Json(order)))
}

async fn load_order(shop: &Shop, order_no: &str) -> Result<Order, ShopError> {
    let row: Option<(i64, i64, String)> =
        sqlx::query_as("SELECT id, amount, status FROM orders WHERE order_no = ?")
            .bind(order_no)
            .fetch_optional(&shop.db)
            .await?;
    let (id, amount, status) = row.ok_or_else(|| idem::Error::NotFound {
        key: order_no.to_owned(),
    })?;
    Ok(Order {
        id,
        order_no: order_no.to_owned(),
        amount,
        status,
    })
}

async fn get_order(
    State(shop): State<Shop>,
    Path(order_no): Path<String>,
) -> Result<Json<Order>, ShopError> {
    Ok(Json(load_order(&shop, &order_no).await?))
}

#[path = "forms.rs"]
mod forms;
#[path = "payments.rs"]
mod payments;
#[path = "metrics.rs"]
pub(crate) mod shop_metrics;

/// `POST /coupons`: the header-keyed layer in front of a plain handler.
async fn claim_coupon(State(shop): State<Shop>, user: User) -> Result<Response, ShopError> {
    let n: i64 = sqlx::query_scalar("INSERT INTO coupons (user_id) VALUES (?) RETURNING id")
        .bind(user.id as i64)
        .fetch_one(&shop.db)
        .await?;
    let location = format!("/coupons/{n}");
    let body = Json(serde_json::json!({ "coupon": n, "user": user.id }));
    Ok((StatusCode::CREATED, [("location", location)], body).into_response())
}

/// The whole service.
pub(crate) fn router(shop: Shop) -> Router {
    let coupons = IdempotencyLayer::new(shop.idem.clone())
        .scene("coupon-claim")
        .scope_by(|req| {
            req.headers
                .get("x-user-id")?
                .to_str()
                .ok()
                .map(str::to_owned)
        });
    Router::new()
        .route("/orders", post(create_order))
        .route("/orders/{order_no}", get(get_order))
        .route("/payments/callback", post(payments::callback))
        .route("/forms/feedback", get(forms::issue).post(forms::submit))
        .route("/coupons", post(claim_coupon).layer(coupons))
        .route("/metrics", get(shop_metrics::render))
        .layer(MarkReplaysLayer)
        .with_state(shop)
}

/// What a transition answered, as JSON.
fn transition_json<T: Serialize>(t: Transition<T>) -> serde_json::Value {
    match t {
        Transition::Applied(v) => serde_json::json!({ "result": "applied", "value": v }),
        Transition::AlreadyApplied { current } => {
            serde_json::json!({ "result": "already_applied", "status": current })
        }
    }
}
