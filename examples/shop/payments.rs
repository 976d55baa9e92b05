//! `POST /payments/callback`: the provider's "paid" callback, delivered any
//! number of times. The order's state change is the guard
//! (`UPDATE orders SET status = 'PAY_SUCCESS' WHERE order_no = ? AND status IN
//! ('WAIT_PAY')` in the callback's transaction); the payment number's primary
//! key is the backstop: even a bug running the body twice could not book the
//! payment twice.

use axum::Json;
use axum::extract::State;
use idem::Transition;
use serde::Deserialize;

use super::{Shop, ShopError, transition_json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
#[state_machine(edges(WaitPay -> PaySuccess, PaySuccess -> Shipped))]
pub(crate) enum OrderStatus {
    WaitPay,
    PaySuccess,
    Shipped,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Callback {
    pub(crate) order_no: String,
    pub(crate) pay_no: String,
    pub(crate) amount: i64,
}

#[idem::state_transition(machine = OrderStatus, from = WaitPay, to = PaySuccess,
    table = "orders", key = order_no, key_column = "order_no", tx = tx)]
async fn on_paid(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    order_no: &str,
    pay_no: &str,
    amount: i64,
) -> Result<Transition<String>, ShopError> {
    sqlx::query("INSERT INTO payments (pay_no, order_no, amount) VALUES (?, ?, ?)")
        .bind(pay_no)
        .bind(order_no)
        .bind(amount)
        .execute(&mut **tx)
        .await?;
    Ok(pay_no.to_owned())
}

/// One delivery: its own transaction, committed when the handler succeeded.
pub(super) async fn callback(
    State(shop): State<Shop>,
    Json(cb): Json<Callback>,
) -> Result<Json<serde_json::Value>, ShopError> {
    let mut tx = shop.db.begin().await?;
    let out = on_paid(&mut tx, &cb.order_no, &cb.pay_no, cb.amount).await?;
    tx.commit().await?;
    Ok(Json(transition_json(out)))
}
