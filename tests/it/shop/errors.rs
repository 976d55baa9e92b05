//! Issue 32 items 4 and 5: every error answer of the shop is problem details
//! with idem's fields, the framework's own rejections included; and an id the
//! column cannot hold is refused, never wrapped.

use http::{Method, StatusCode};

use crate::shop::support::app::{IdemStore, server::Limits};
use crate::shop::support::start;

const USER: &[(&str, &str)] = &[("x-user-id", "1"), ("idempotency-key", "k-1")];
const JSON: &[(&str, &str)] = &[
    ("x-user-id", "1"),
    ("idempotency-key", "k-1"),
    ("content-type", "application/json"),
];
const FORM: &[(&str, &str)] = &[("content-type", "application/x-www-form-urlencoded")];

/// One request that must be refused with `status`.
struct Case {
    what: &'static str,
    method: Method,
    path: &'static str,
    headers: &'static [(&'static str, &'static str)],
    body: String,
    status: StatusCode,
}

fn case(
    what: &'static str,
    method: Method,
    path: &'static str,
    headers: &'static [(&'static str, &'static str)],
    body: &str,
    status: u16,
) -> Case {
    Case {
        what,
        method,
        path,
        headers,
        body: body.to_owned(),
        status: StatusCode::from_u16(status).expect("a status code"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rejection_is_problem_json_with_idems_fields() {
    let shop = start(
        IdemStore::Memory,
        Limits {
            max_body: 1024,
            ..Limits::default()
        },
    )
    .await;
    let big = format!(r#"{{"amount":1,"pad":"{}"}}"#, "x".repeat(4096));
    let cases = [
        case("invalid JSON", Method::POST, "/orders", JSON, "{", 400),
        case(
            "JSON of the wrong shape",
            Method::POST,
            "/orders",
            JSON,
            r#"{"amount":"x"}"#,
            422,
        ),
        case(
            "no Content-Type",
            Method::POST,
            "/orders",
            USER,
            r#"{"amount":1}"#,
            415,
        ),
        case(
            "a body over the limit",
            Method::POST,
            "/orders",
            JSON,
            &big,
            413,
        ),
        case("an unknown route", Method::GET, "/nowhere", &[], "", 404),
        case(
            "a method the route lacks",
            Method::DELETE,
            "/orders",
            &[],
            "",
            405,
        ),
        case(
            "a form that does not parse",
            Method::POST,
            "/",
            FORM,
            "amount=x",
            422,
        ),
        case(
            "callback JSON that is no object",
            Method::POST,
            "/payments/callback",
            JSON,
            "[]",
            422,
        ),
        case(
            "the shop's own refusal",
            Method::POST,
            "/orders",
            &[("x-user-id", "nobody")],
            "",
            400,
        ),
    ];
    for Case {
        what,
        method,
        path,
        headers,
        body,
        status,
    } in cases
    {
        let a = shop.send(method, path, headers, body).await;
        assert_eq!(a.status, status, "{what}: {a:?}");
        assert_eq!(
            a.header("content-type"),
            Some("application/problem+json"),
            "{what}: {a:?}"
        );
        let v: serde_json::Value = serde_json::from_str(&a.body)
            .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {}", a.body));
        let mut fields: Vec<_> = v.as_object().expect("an object").keys().cloned().collect();
        fields.sort();
        assert_eq!(fields, ["detail", "status", "title", "type"], "{what}: {v}");
        assert_eq!(v["status"], status.as_u16(), "{what}: {v}");
        assert!(
            v["title"].as_str().is_some_and(|t| !t.is_empty()),
            "{what}: {v}"
        );
        if status == StatusCode::METHOD_NOT_ALLOWED {
            assert!(a.header("allow").is_some(), "{what} keeps `Allow`: {a:?}");
        }
    }
    assert_eq!(shop.count("SELECT COUNT(*) FROM orders").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_id_past_the_column_is_refused_not_wrapped() {
    let shop = start(IdemStore::Memory, Limits::default()).await;
    let a = shop
        .order(&u64::MAX.to_string(), "k-max", r#"{"amount":100}"#)
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{a:?}");
    a.assert_problem(StatusCode::BAD_REQUEST);
    assert_eq!(
        shop.count("SELECT COUNT(*) FROM orders").await,
        0,
        "no order for a user id the column cannot hold"
    );
    // The largest id that fits is stored exactly.
    let a = shop
        .order(&i64::MAX.to_string(), "k-fits", r#"{"amount":100}"#)
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    assert_eq!(
        shop.count("SELECT user_id FROM orders").await,
        i64::MAX,
        "stored exactly"
    );
    for bad in ["-1", "1.5", "1e3", ""] {
        let a = shop.order(bad, "k-bad", r#"{"amount":100}"#).await;
        a.assert_problem(StatusCode::BAD_REQUEST);
    }
}
