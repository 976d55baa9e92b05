//! `GET /`: the order form as a browser gets it, plain HTML with no script.
//! Its idempotency key is a hidden field made when the form is rendered, so
//! everything one rendered form sends carries one key: a double or triple
//! click on "Place order", and the browser's "resubmit the form?" on reload.
//! `POST /` places the order once per (customer, key) and answers with the
//! order's page; every resubmission gets the same order's page.
//!
//! A new render is a new key, hence a new order: what a user who comes back
//! to the shop to order again expects. A changed amount under an old key
//! (back, edit, submit) is refused (`422`, the payload fingerprint).

use std::sync::atomic::Ordering;

use axum::Form;
use axum::extract::State;
use axum::response::Html;
use serde::Deserialize;

use super::{Order, Shop, ShopError, insert_order, load_order, order_no};

/// The demo customer the page orders for (an auth layer would say who).
const CUSTOMER: i64 = 7;

pub(super) async fn form() -> Html<String> {
    let key = uuid::Uuid::new_v4().simple().to_string();
    Html(page(
        "Order",
        &format!(
            r#"<h1>Place an order</h1>
<form method="post" action="/">
  <input type="hidden" name="key" value="{key}">
  <input type="hidden" name="customer" value="{CUSTOMER}">
  <label>Amount (cents) <input id="amount" name="amount" type="number" value="4200" min="1"></label>
  <button id="submit" type="submit">Place order</button>
</form>"#
        ),
    ))
}

#[derive(Debug, Deserialize)]
pub(crate) struct OrderForm {
    pub(crate) key: String,
    pub(crate) customer: String,
    pub(crate) amount: i64,
}

pub(super) async fn submit(
    State(shop): State<Shop>,
    Form(f): Form<OrderForm>,
) -> Result<Html<String>, ShopError> {
    shop.form_posts.fetch_add(1, Ordering::SeqCst);
    let customer = super::parse_user_id(&f.customer)
        .ok_or(ShopError::BadRequest("`customer` is not a customer number"))?;
    if !super::valid_key(&f.key) || f.amount <= 0 {
        return Err(ShopError::BadRequest(
            "the form's key or amount is not valid: reload the form",
        ));
    }
    // A double click makes the browser drop the first request's connection:
    // the placement runs in its own task, so it finishes and records its
    // result instead of being cancelled halfway (which would leave the
    // second request waiting out the lease).
    let placing = tokio::spawn({
        let shop = shop.clone();
        async move { place(&shop, customer, &f.key, f.amount).await }
    });
    let order = placing.await.map_err(|_| ShopError::Interrupted)??;
    Ok(Html(page(
        "Order placed",
        &format!(
            r#"<h1>Thank you</h1>
<p>Order number <strong id="order-no">{}</strong> (#<span id="order-id">{}</span>), {} cents, {}.</p>
<p><a href="/">Order again</a></p>"#,
            escape(&order.order_no),
            order.id,
            order.amount,
            escape(&order.status)
        ),
    )))
}

/// The order of one rendered form: the same guard, backstop and degraded
/// mode as `POST /orders`, under its own scene.
#[idem::idempotent(
    key = "order-form:<customer>:<key>",
    fingerprint = [amount],
    ttl = "24h",
    lease = "10s",
    backstop = "uk_orders_order_no",
    on_conflict = find_placed,
    degrade = "backstop",
    handle = &shop.idem
)]
async fn place(shop: &Shop, customer: i64, key: &str, amount: i64) -> Result<Order, ShopError> {
    insert_order(shop, customer, key, amount).await
}

async fn find_placed(shop: &Shop, customer: &i64, key: &str, _: &i64) -> Result<Order, ShopError> {
    load_order(shop, &order_no(*customer, key)).await
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} · idem shop</title>\
<style>body{{font-family:sans-serif;margin:3em}}label,button{{display:block;margin:1em 0}}</style>\
</head><body>\n{body}\n</body></html>\n"
    )
}

/// Text safe inside HTML.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
