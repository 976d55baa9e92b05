// An axum handler: extractor patterns, placeholders naming what they bind,
// an axum response as the `Ok` type; it must still be a `Handler`.
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use idem::Idem;

#[derive(Clone)]
pub struct App {
    idem: Idem,
}

#[derive(serde::Serialize, serde::Deserialize)]
pub struct CreateOrder {
    order_no: String,
}

#[derive(serde::Serialize, serde::Deserialize)]
pub struct Order {
    order_no: String,
}

#[derive(Debug)]
pub struct ApiError(idem::Error);
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

#[idem::idempotent(key = "order-create:<req.order_no>", fingerprint = [req], handle = &app.idem)]
async fn create(
    State(app): State<App>,
    Json(req): Json<CreateOrder>,
) -> Result<(StatusCode, Json<Order>), ApiError> {
    Ok((StatusCode::CREATED, Json(Order { order_no: req.order_no })))
}

#[idem::idempotent(key = "order-pay:<order_no>", handle = &app.idem)]
async fn pay(
    State(app): State<App>,
    Path(order_no): Path<String>,
) -> Result<Json<Order>, ApiError> {
    Ok(Json(Order { order_no }))
}

#[idem::idempotent(key = "refund:<id>", handle = &app.idem)]
async fn refund(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<idem::http::StoredResponse, ApiError> {
    Ok(idem::http::StoredResponse::capture((StatusCode::ACCEPTED, id)).await?)
}

fn main() {
    let idem = Idem::builder().store(idem::MemoryStore::new()).build().unwrap();
    let _: Router = Router::new()
        .route("/orders", post(create))
        .route("/orders/{order_no}/pay", post(pay))
        .route("/refunds/{id}", post(refund))
        .layer(idem::http::MarkReplaysLayer)
        .with_state(App { idem });
}
