//! Inventory and refunds, the two techniques that take a row lock of some kind.
//!
//! - `POST /inventory/{sku}/deduct` (`Idempotency-Key`, `{"quantity", "version"}`):
//!   the optimistic lock. The expected version is the one the client read
//!   (`GET /inventory/{sku}`), so a repeat carries a stale version and can
//!   never deduct twice; the request id is written into the row, so the
//!   repeat is told apart from someone else's change: `already_applied`
//!   rather than `409`.
//! - `POST /orders/{order_no}/refunds` (`{"refund_no", "amount"}`): the
//!   pessimistic lock serialises refunds of one order (`BEGIN IMMEDIATE` on
//!   SQLite, `SELECT … FOR UPDATE` elsewhere) so the refunded total never
//!   exceeds the amount paid; insert-once on the refund number's unique index
//!   makes a repeat answer with the refund it already made.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use idem::db::Arg;
use idem::db::insert_once::{InsertOnce, Inserted};
use idem::db::optimistic::{Optimistic, Versioned};
use idem::db::pessimistic::{RowLock, transaction};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{RequestId, Shop, ShopError};

/// The stock tables and one SKU to sell.
pub(crate) const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS inventory (sku TEXT PRIMARY KEY, stock INTEGER NOT NULL, \
     version INTEGER NOT NULL, last_request TEXT)",
    "INSERT OR IGNORE INTO inventory (sku, stock, version) VALUES ('sku-1', 100, 0)",
    "CREATE TABLE IF NOT EXISTS refunds (refund_no TEXT NOT NULL, order_no TEXT NOT NULL, \
     amount INTEGER NOT NULL)",
    "CREATE UNIQUE INDEX IF NOT EXISTS uk_refunds_refund_no ON refunds (refund_no)",
];

pub(super) async fn read(
    State(shop): State<Shop>,
    Path(sku): Path<String>,
) -> Result<Json<Value>, ShopError> {
    let row: Option<(i64, i64)> =
        sqlx::query_as("SELECT stock, version FROM inventory WHERE sku = ?")
            .bind(&sku)
            .fetch_optional(&shop.db)
            .await?;
    let (stock, version) = row.ok_or_else(|| idem::Error::NotFound { key: sku.clone() })?;
    Ok(Json(
        json!({ "sku": sku, "stock": stock, "version": version }),
    ))
}

#[derive(Debug, Deserialize)]
pub(crate) struct Deduct {
    pub(crate) quantity: i64,
    pub(crate) version: i64,
}

pub(super) async fn deduct(
    State(shop): State<Shop>,
    Path(sku): Path<String>,
    req_id: RequestId,
    Json(d): Json<Deduct>,
) -> Result<Json<Value>, ShopError> {
    if d.quantity <= 0 {
        return Err(ShopError::BadRequest("`quantity` must be at least 1"));
    }
    let (quantity, version) = (d.quantity, d.version);
    // The transaction may run again (a conflict): each run owns its inputs.
    let out = transaction(&shop.db, |tx| {
        let (shop, sku, req) = (shop.clone(), sku.clone(), req_id.0.clone());
        Box::pin(async move {
            let deduct = Optimistic::new("inventory", "sku", "version")?
                .handle(&shop.idem)
                .request_column("last_request")?
                .add("stock", -quantity)?
                .at_least("stock", quantity)?;
            let r = deduct.apply(tx, Arg::Text(&sku), version, &req).await?;
            Ok::<_, ShopError>(r)
        })
    })
    .await?;
    match out {
        Versioned::Applied { version } => {
            Ok(Json(json!({ "result": "applied", "version": version })))
        }
        Versioned::AlreadyApplied { version } => Ok(Json(
            json!({ "result": "already_applied", "version": version }),
        )),
        Versioned::Conflict { .. } => Err(ShopError::Conflict(
            "the stock changed since you read it: read it again",
        )),
        Versioned::PreconditionFailed { .. } => Err(ShopError::Conflict("not enough stock")),
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct Refund {
    pub(crate) refund_no: String,
    pub(crate) amount: i64,
}

pub(super) async fn refund(
    State(shop): State<Shop>,
    Path(order_no): Path<String>,
    Json(r): Json<Refund>,
) -> Result<(StatusCode, Json<Value>), ShopError> {
    if r.amount <= 0 || !super::valid_key(&r.refund_no) {
        return Err(ShopError::BadRequest(
            "send `refund_no` (1-64 characters) and a positive `amount`",
        ));
    }
    let got = transaction(&shop.db, |tx| {
        let (shop, order, refund_no, amount) =
            (shop.clone(), order_no.clone(), r.refund_no.clone(), r.amount);
        Box::pin(async move {
            let (order, refund_no) = (order.as_str(), refund_no.as_str());
            let found = RowLock::new("orders", "order_no")?
                .handle(&shop.idem)
                .lock(tx, Arg::Text(order))
                .await?;
            if !found {
                return Err(idem::Error::NotFound {
                    key: order.to_owned(),
                }
                .into());
            }
            let got = InsertOnce::new("uk_refunds_refund_no")
                .handle(&shop.idem)
                .run(
                    tx,
                    refund_no,
                    |tx| {
                        Box::pin(async move {
                            // The constrained insert first: a repeat stops here.
                            sqlx::query(
                                "INSERT INTO refunds (refund_no, order_no, amount) VALUES (?, ?, ?)",
                            )
                            .bind(refund_no)
                            .bind(order)
                            .bind(amount)
                            .execute(&mut **tx)
                            .await?;
                            let (paid, refunded): (i64, i64) = sqlx::query_as(
                                "SELECT amount, (SELECT COALESCE(SUM(amount), 0) FROM refunds \
                                 WHERE order_no = ?) FROM orders WHERE order_no = ?",
                            )
                            .bind(order)
                            .bind(order)
                            .fetch_one(&mut **tx)
                            .await?;
                            if refunded > paid {
                                // Over the payment: not made (the row lock
                                // keeps other refunds of this order waiting).
                                sqlx::query("DELETE FROM refunds WHERE refund_no = ?")
                                    .bind(refund_no)
                                    .execute(&mut **tx)
                                    .await?;
                                return Ok(None);
                            }
                            Ok(Some((order.to_owned(), amount)))
                        })
                    },
                    |tx| {
                        Box::pin(async move {
                            sqlx::query_as::<_, (String, i64)>(
                                "SELECT order_no, amount FROM refunds WHERE refund_no = ?",
                            )
                            .bind(refund_no)
                            .fetch_optional(&mut **tx)
                            .await
                        })
                    },
                )
                .await?;
            Ok::<_, ShopError>(got)
        })
    })
    .await?;
    let (status, row) = match got {
        Inserted::New(row) => (StatusCode::CREATED, row),
        Inserted::Existing(row) => (StatusCode::OK, row),
    };
    match row {
        Some((order_no, amount)) => Ok((
            status,
            Json(json!({ "refund_no": r.refund_no, "order_no": order_no, "amount": amount })),
        )),
        None => Err(ShopError::Conflict(
            "the refunds would exceed the amount paid",
        )),
    }
}
