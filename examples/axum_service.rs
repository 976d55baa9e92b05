//! Using idem in an axum service: the handle lives in the application state and
//! each guarded function takes it with `handle = &app.idem`; the handler maps
//! idem's errors to HTTP statuses. The README shows this file.
//!
//! ```text
//! cargo run --example axum_service
//! ```
//!
//! Serves on a spare local port, sends the same `POST /orders` twice with one
//! request id and once with another, and exits non-zero unless the repeat got
//! the first order back and one order was created per request id.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Json, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use idem::{Idem, MemoryStore};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the service shares with every handler: the idem handle beside its
/// other resources (a pool, clients, ...).
#[derive(Clone)]
struct App {
    idem: Idem,
    orders: Arc<Mutex<Vec<Order>>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Order {
    id: usize,
    user_id: u64,
    amount: i64,
}

#[derive(Debug, Deserialize)]
struct CreateOrder {
    user_id: u64,
    request_id: String,
    amount: i64,
}

/// The service's error: idem's errors become statuses a client can act on.
#[derive(Debug, thiserror::Error)]
enum AppError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let AppError::Idem(e) = &self;
        let status = match e {
            idem::Error::InProgress { .. } => StatusCode::CONFLICT,
            idem::Error::PayloadMismatch { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            e if e.is_retryable() => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        (status, self.to_string()).into_response()
    }
}

/// The business operation, guarded: one order per (user, request id), whatever
/// the retries. `fingerprint` makes a reused request id with another amount a
/// 422 rather than a silent replay.
#[idem::idempotent(key = "order-create:<user_id>:<request_id>", ttl = "24h", wait = "5s",
                   fingerprint = [amount], handle = &app.idem)]
async fn create_order(
    app: &App,
    user_id: u64,
    request_id: &str,
    amount: i64,
) -> Result<Order, AppError> {
    let mut orders = app.orders.lock().unwrap();
    let order = Order {
        id: orders.len() + 1,
        user_id,
        amount,
    };
    orders.push(order.clone());
    Ok(order)
}

async fn post_order(
    State(app): State<App>,
    Json(req): Json<CreateOrder>,
) -> Result<Json<Order>, AppError> {
    let order = create_order(&app, req.user_id, &req.request_id, req.amount).await?;
    Ok(Json(order))
}

/// One HTTP/1.1 request over a fresh connection; returns the status line and body.
async fn send(addr: std::net::SocketAddr, body: &str) -> std::io::Result<(String, String)> {
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    let req = format!(
        "POST /orders HTTP/1.1\r\nhost: local\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await?;
    let mut out = String::new();
    s.read_to_string(&mut out).await?;
    let status = out.lines().next().unwrap_or_default().to_owned();
    let body = out.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
    Ok((status, body))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let idem = Idem::builder()
        .store(MemoryStore::new())
        .namespace("shop")
        .build()?;
    let app = App {
        idem,
        orders: Arc::default(),
    };
    let router = Router::new()
        .route("/orders", post(post_order))
        .with_state(app.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    println!(
        "backends: records in the in-process memory store (namespace `shop`), orders in memory; serving on http://{addr}"
    );
    tokio::spawn(async move { axum::serve(listener, router).await });

    let first = send(addr, r#"{"user_id":7,"request_id":"r-1","amount":500}"#).await?;
    let again = send(addr, r#"{"user_id":7,"request_id":"r-1","amount":500}"#).await?;
    let other = send(addr, r#"{"user_id":7,"request_id":"r-2","amount":500}"#).await?;
    let reused = send(addr, r#"{"user_id":7,"request_id":"r-1","amount":900}"#).await?;
    println!(
        "first:  {first:?}\nrepeat: {again:?}\nother:  {other:?}\nreused id, other amount: {reused:?}"
    );
    let created = app.orders.lock().unwrap().len();
    let ok = first.0.contains("200")
        && first == again
        && other.1 != first.1
        && reused.0.contains("422")
        && created == 2;
    println!(
        "orders created: {created}; {}",
        if ok { "PASS" } else { "FAIL" }
    );
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
