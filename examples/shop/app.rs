//! The shop service: an axum router over idem, one route per technique that
//! exists today, and `/metrics`. `main.rs` serves it; `--demo` and the tests
//! (`tests/it/shop/http.rs`) build the same router from here.
//!
//! | route | technique |
//! |---|---|
//! | `POST /orders` | `#[idempotent]` on the handler (key: user + `Idempotency-Key`), unique index `uk_orders_order_no` as backstop, `degrade = "backstop"` |
//! | `GET /orders/{order_no}` | read |
//! | `POST /payments/callback` | state machine `WAIT_PAY -> PAY_SUCCESS` (`#[state_transition]`) + unique payment number |
//! | `GET /forms/feedback`, `POST /forms/feedback` | one-time token (`Idem::tokens()`) |
//! | `POST /coupons` | the `Idempotency-Key` layer (`IdempotencyLayer`) |
//! | `GET /metrics` | Prometheus text, plus the seed's three figures from `Idem::stats()` |
//! | `GET /`, `POST /` | the HTML order form: its key is a hidden field made per render (`page.rs`) |
//! | `GET /inventory/{sku}`, `POST /inventory/{sku}/deduct` | optimistic lock over a version column, the request id in the row (`stock.rs`) |
//! | `POST /orders/{order_no}/refunds` | pessimistic row lock + insert-once on the refund number (`stock.rs`) |
//!
//! `server.rs` serves it with timeouts and limits, `problem.rs` gives every
//! error answer one format.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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
    /// Submissions of the HTML order form received (the browser test's clicks).
    pub(crate) form_posts: AtomicUsize,
    /// How long an order's body takes after its insert, in ms (50: enough for
    /// concurrent copies to overlap; the browser test makes it longer, so
    /// every click of a double click lands while the form is still shown).
    pub(crate) order_pause_ms: AtomicU64,
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
    /// Stored in an `INTEGER` (i64) column: parsed as one, so an id that does
    /// not fit is refused rather than wrapped (`u64::MAX` was stored as -1).
    pub(crate) id: i64,
}

/// A user id the `user_id` column holds exactly: 0 ..= i64::MAX.
pub(crate) fn parse_user_id(v: &str) -> Option<i64> {
    v.parse::<i64>().ok().filter(|id| *id >= 0)
}

/// The longest client key the shop accepts, in bytes.
pub(crate) const MAX_KEY: usize = 64;

/// A client key the shop accepts: 1–64 bytes.
pub(crate) fn valid_key(k: &str) -> bool {
    !k.is_empty() && k.len() <= MAX_KEY
}

/// The client's `Idempotency-Key` (the request id of the seed's key design).
pub(crate) struct RequestId(pub(crate) String);

impl<S: Send + Sync> FromRequestParts<S> for User {
    type Rejection = ShopError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ShopError> {
        let id = parts.headers.get("x-user-id").and_then(|v| v.to_str().ok());
        id.and_then(parse_user_id)
            .map(|id| User { id })
            .ok_or(ShopError::BadRequest(
                "send `X-User-Id: <number from 0 to 9223372036854775807>`",
            ))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for RequestId {
    type Rejection = ShopError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ShopError> {
        // The layer's own parsing and rules: one field, a token or an RFC 8941
        // string (`"q"` and `q` are one key), no commas or control characters.
        idem::http::IdempotencyKey::from_headers(&parts.headers, MAX_KEY)
            .map(|k| RequestId(k.as_str().to_owned()))
            .map_err(|_| {
                ShopError::BadRequest(
                    "send one `Idempotency-Key: <1-64 characters>` header (a token or a quoted string)",
                )
            })
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
    #[error("{0}")]
    Conflict(&'static str),
    #[error("the request's task ended abnormally")]
    Interrupted,
}

impl idem::db::pessimistic::TxConflict for ShopError {
    fn is_tx_conflict(&self) -> bool {
        match self {
            ShopError::Idem(e) => idem::db::pessimistic::TxConflict::is_tx_conflict(e),
            ShopError::Db(e) => idem::db::is_retryable_conflict(e),
            _ => false,
        }
    }
}

impl IntoResponse for ShopError {
    fn into_response(self) -> Response {
        let (status, title) = match self {
            ShopError::Idem(e) => return e.into_response(),
            ShopError::Db(_) => (StatusCode::INTERNAL_SERVER_ERROR, "database error"),
            ShopError::Timeout => (StatusCode::GATEWAY_TIMEOUT, "payment gateway timed out"),
            ShopError::BadRequest(why) => (StatusCode::BAD_REQUEST, why),
            ShopError::Conflict(why) => (StatusCode::CONFLICT, why),
            ShopError::Interrupted => (StatusCode::INTERNAL_SERVER_ERROR, "internal error"),
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
    let order = insert_order(&shop, user.id, &req_id.0, req.amount).await?;
    if shop.time_out_after_insert.swap(false, Ordering::SeqCst) {
        return Err(ShopError::Timeout); // committed, but the client saw a failure
    }
    Ok((StatusCode::CREATED, Json(order)))
}

/// The order number of (user, client key): the backstop's unique value.
pub(crate) fn order_no(user: i64, key: &str) -> String {
    format!("{user}-{key}")
}

/// The order's insert, the first effect of both order routes (JSON and form).
pub(crate) async fn insert_order(
    shop: &Shop,
    user: i64,
    key: &str,
    amount: i64,
) -> Result<Order, ShopError> {
    shop.order_runs.fetch_add(1, Ordering::SeqCst);
    let order_no = order_no(user, key);
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO orders (order_no, user_id, amount, status) VALUES (?, ?, ?, 'WAIT_PAY') RETURNING id",
    )
    .bind(&order_no)
    .bind(user)
    .bind(amount)
    .fetch_one(&shop.db)
    .await?;
    // Slow enough that concurrent copies really overlap.
    let pause = shop.order_pause_ms.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(pause)).await;
    Ok(Order {
        id,
        order_no,
        amount,
        status: "WAIT_PAY".into(),
    })
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
    let order = load_order(shop, &order_no(user.id, &req_id.0)).await?;
    Ok((StatusCode::CREATED, Json(order)))
}

pub(crate) async fn load_order(shop: &Shop, order_no: &str) -> Result<Order, ShopError> {
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
#[path = "page.rs"]
mod page;
#[path = "payments.rs"]
mod payments;
#[path = "problem.rs"]
pub(crate) mod problem;
#[path = "server.rs"]
pub(crate) mod server;
#[path = "metrics.rs"]
pub(crate) mod shop_metrics;
#[path = "stock.rs"]
mod stock;

/// `POST /coupons`: the header-keyed layer in front of a plain handler.
async fn claim_coupon(State(shop): State<Shop>, user: User) -> Result<Response, ShopError> {
    let n: i64 = sqlx::query_scalar("INSERT INTO coupons (user_id) VALUES (?) RETURNING id")
        .bind(user.id)
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
        .route("/", get(page::form).post(page::submit))
        .route("/orders", post(create_order))
        .route("/orders/{order_no}/refunds", post(stock::refund))
        .route("/inventory/{sku}", get(stock::read))
        .route("/inventory/{sku}/deduct", post(stock::deduct))
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
