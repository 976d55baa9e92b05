//! Issue 26 item 5: the shop's inventory and refund routes, over HTTP.

use http::{Method, StatusCode};

use crate::shop::support::app::{IdemStore, server::Limits};
use crate::shop::support::{Running, start};

async fn deduct(
    shop: &Running,
    key: &str,
    quantity: i64,
    version: i64,
) -> crate::shop::support::Answer {
    let headers = [
        ("idempotency-key", key),
        ("content-type", "application/json"),
    ];
    let body = format!(r#"{{"quantity":{quantity},"version":{version}}}"#);
    shop.send(Method::POST, "/inventory/sku-1/deduct", &headers, body)
        .await
}

async fn refund(
    shop: &Running,
    order: &str,
    refund_no: &str,
    amount: i64,
) -> crate::shop::support::Answer {
    let headers = [("content-type", "application/json")];
    let body = format!(r#"{{"refund_no":"{refund_no}","amount":{amount}}}"#);
    shop.send(
        Method::POST,
        &format!("/orders/{order}/refunds"),
        &headers,
        body,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_deduction_applies_once_and_a_stale_one_is_refused() {
    let shop = start(IdemStore::Memory, Limits::default()).await;
    let read = shop.send(Method::GET, "/inventory/sku-1", &[], "").await;
    let v: serde_json::Value = serde_json::from_str(&read.body).unwrap();
    assert_eq!(
        (v["stock"].as_i64(), v["version"].as_i64()),
        (Some(100), Some(0)),
        "{v}"
    );
    let a = deduct(&shop, "r-1", 2, 0).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert!(a.body.contains(r#""result":"applied""#), "{a:?}");
    let again = deduct(&shop, "r-1", 2, 0).await;
    assert!(again.body.contains("already_applied"), "{again:?}");
    deduct(&shop, "r-2", 1, 0)
        .await
        .assert_problem(StatusCode::CONFLICT);
    deduct(&shop, "r-3", 500, 1)
        .await
        .assert_problem(StatusCode::CONFLICT);
    assert_eq!(
        shop.count("SELECT stock FROM inventory WHERE sku = 'sku-1'")
            .await,
        98
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_refund_is_made_once_and_refunds_never_exceed_the_payment() {
    let shop = start(IdemStore::Memory, Limits::default()).await;
    let order = shop.order("9", "k-r", r#"{"amount":100}"#).await;
    assert_eq!(order.status, StatusCode::CREATED, "{order:?}");
    let first = refund(&shop, "9-k-r", "rf-1", 60).await;
    assert_eq!(first.status, StatusCode::CREATED, "{first:?}");
    let again = refund(&shop, "9-k-r", "rf-1", 60).await;
    assert_eq!(again.status, StatusCode::OK, "{again:?}");
    assert_eq!(again.body, first.body);
    refund(&shop, "9-k-r", "rf-2", 50)
        .await
        .assert_problem(StatusCode::CONFLICT);
    refund(&shop, "nope", "rf-3", 1)
        .await
        .assert_problem(StatusCode::NOT_FOUND);
    assert_eq!(
        shop.count("SELECT COALESCE(SUM(amount), 0) FROM refunds")
            .await,
        60
    );
}
