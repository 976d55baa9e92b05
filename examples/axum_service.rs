//! Using idem in an axum service: the handle lives in the application state and
//! each guarded function takes it with `handle = &app.idem`; the client sends
//! its `Idempotency-Key` header, which the handler reads with the
//! `IdempotencyKey` extractor; idem's errors reach the client as problem
//! details that never show the internal key or fingerprints.
//!
//! ```text
//! cargo run --example axum_service --features axum
//! ```
//!
//! Serves on a spare local port, sends the same `POST /orders` twice with one
//! key and once with another, then reuses the first key with another amount;
//! exits non-zero unless the repeat got the first order back, one order was
//! created per key, and the reuse got a `422` that names no internal key.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Json, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use idem::http::IdempotencyKey;
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
    amount: i64,
}

/// The service's error. Its `Display` (the internal key, fingerprints, a
/// store's error text) is for the logs; the client gets a status and a safe
/// message.
#[derive(Debug, thiserror::Error)]
enum AppError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        match self {
            // `409` with `Retry-After`, `422`, `503`, ... as problem details
            // (without axum: `e.status()` and `e.client_message()`).
            AppError::Idem(e) => {
                eprintln!("order-create failed: {e}");
                e.into_response()
            }
        }
    }
}

/// The business operation, guarded: one order per (user, request id), whatever
/// the retries. `fingerprint` makes a reused request id with another amount a
/// 422 rather than a silent replay.
#[idem::idempotent(key = "order-create:<user_id>:<key>", ttl = "24h", wait = "5s",
                   fingerprint = [amount], handle = &app.idem)]
async fn create_order(app: &App, user_id: u64, key: &str, amount: i64) -> Result<Order, AppError> {
    let mut orders = app.orders.lock().unwrap();
    let order = Order {
        id: orders.len() + 1,
        user_id,
        amount,
    };
    orders.push(order.clone());
    Ok(order)
}

/// A request without a valid `Idempotency-Key` header is refused with a `400`
/// problem by the extractor before the handler runs.
async fn post_order(
    State(app): State<App>,
    key: IdempotencyKey,
    Json(req): Json<CreateOrder>,
) -> Result<Json<Order>, AppError> {
    let order = create_order(&app, req.user_id, key.as_str(), req.amount).await?;
    Ok(Json(order))
}

/// One HTTP/1.1 request over a fresh connection; returns the status line and body.
async fn send(
    addr: std::net::SocketAddr,
    key: &str,
    body: &str,
) -> std::io::Result<(String, String)> {
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    let req = format!(
        "POST /orders HTTP/1.1\r\nhost: local\r\ncontent-type: application/json\r\n\
         idempotency-key: {key}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
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

    let first = send(addr, "r-1", r#"{"user_id":7,"amount":500}"#).await?;
    let again = send(addr, "r-1", r#"{"user_id":7,"amount":500}"#).await?;
    let other = send(addr, "r-2", r#"{"user_id":7,"amount":500}"#).await?;
    let reused = send(addr, "r-1", r#"{"user_id":7,"amount":900}"#).await?;
    println!(
        "first:  {first:?}\nrepeat: {again:?}\nother:  {other:?}\nreused key, other amount: {reused:?}"
    );
    let created = app.orders.lock().unwrap().len();
    let ok = first.0.contains("200")
        && first == again
        && other.1 != first.1
        && reused.0.contains("422")
        && !reused.1.contains("shop:order-create")
        && !reused.1.contains("fingerprint")
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
