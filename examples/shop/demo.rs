//! `--demo`: the seed's four acceptance rounds, replayed over HTTP against the
//! shop on loopback (`POST /orders`), then a payment callback delivered five
//! times, a double-submitted form, and the `/metrics` scrape.
//!
//! 1. the same request 10 times in a row (a double-clicking user);
//! 2. 50 concurrent copies of one request (a gateway retry storm);
//! 3. a first attempt that times out *after* its insert committed, then a retry;
//! 4. the idempotency store goes down: the unique index alone keeps one order.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::http::{Method, Request, StatusCode};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::app::Shop;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One round's figures.
#[derive(Debug, Clone)]
pub(crate) struct Round {
    pub(crate) name: &'static str,
    pub(crate) requests: usize,
    pub(crate) body_runs: usize,
    pub(crate) replays: usize,
    pub(crate) errors: usize,
    pub(crate) orders: i64,
    pub(crate) pass: bool,
}

/// What the demo did and saw.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) rounds: Vec<Round>,
    /// Deliveries answered `applied`, `already_applied`; payment rows.
    pub(crate) callbacks: (usize, usize, i64),
    /// The form's two submissions' statuses.
    pub(crate) form: (u16, u16),
    pub(crate) metrics: String,
}

struct Http {
    base: String,
    client: Client<HttpConnector, Full<Bytes>>,
}

/// One answer: status, `Idempotent-Replayed`, body.
struct Answer {
    status: StatusCode,
    replayed: bool,
    body: String,
}

impl Http {
    async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, String)],
        body: &str,
    ) -> Result<Answer, BoxError> {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let req = req
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_owned())))?;
        let resp = self.client.request(req).await?;
        let status = resp.status();
        let replayed = resp
            .headers()
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true");
        let body = resp.into_body().collect().await?.to_bytes();
        Ok(Answer {
            status,
            replayed,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }

    async fn order(&self, user: u64, key: &str, amount: i64) -> Result<Answer, BoxError> {
        let headers = [
            ("x-user-id", user.to_string()),
            ("idempotency-key", key.to_owned()),
        ];
        let body = format!(r#"{{"amount":{amount}}}"#);
        self.send(Method::POST, "/orders", &headers, &body).await
    }
}

async fn rows(shop: &Shop, order_no: &str) -> Result<i64, BoxError> {
    Ok(
        sqlx::query_scalar("SELECT COUNT(*) FROM orders WHERE order_no = ?")
            .bind(order_no)
            .fetch_one(&shop.db)
            .await?,
    )
}

/// Waits until the store answers again: the circuit breaker opened during the
/// outage lets a probe through after its cooldown (2 s by default).
async fn recovered(shop: &Shop) -> Result<(), BoxError> {
    let probe = shop.idem.key("probe", &[]);
    for _ in 0..100 {
        if shop.idem.inspect(&probe).await.is_ok() {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Err("the idempotency store did not come back within 10 s".into())
}

/// Tallies answers: successes must all carry one order's body.
fn tally(name: &'static str, answers: &[Answer], runs: usize, orders: i64) -> Round {
    let ok: Vec<&Answer> = answers.iter().filter(|a| a.status.is_success()).collect();
    let one_body = ok.windows(2).all(|w| w[0].body == w[1].body);
    Round {
        name,
        requests: answers.len(),
        body_runs: runs,
        replays: ok.iter().filter(|a| a.replayed).count(),
        errors: answers.len() - ok.len(),
        orders,
        pass: one_body && orders == 1,
    }
}

/// Runs the demo against `base` (`http://127.0.0.1:port`) served by `shop`.
pub(crate) async fn run(shop: &Shop, base: &str) -> Result<Report, BoxError> {
    let http = Arc::new(Http {
        base: base.to_owned(),
        client: Client::builder(TokioExecutor::new()).build_http(),
    });
    let runs = || shop.order_runs.load(Ordering::SeqCst);
    let mut rounds = Vec::new();

    // Round 1: ten times in a row.
    let before = runs();
    let mut answers = Vec::new();
    for _ in 0..10 {
        answers.push(http.order(1001, "req-a", 4200).await?);
    }
    let mut r = tally(
        "10 sequential repeats",
        &answers,
        runs() - before,
        rows(shop, "1001-req-a").await?,
    );
    r.pass &= r.body_runs == 1 && r.errors == 0 && r.replays == 9;
    rounds.push(r);

    // Round 2: 50 copies at once, released together.
    let before = runs();
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..50 {
        let (http, barrier) = (http.clone(), barrier.clone());
        tasks.spawn(async move {
            barrier.wait().await;
            http.order(1002, "req-b", 990)
                .await
                .map_err(|e| e.to_string())
        });
    }
    let mut answers = Vec::new();
    for a in tasks.join_all().await {
        answers.push(a?);
    }
    let mut r = tally(
        "50 concurrent, one key",
        &answers,
        runs() - before,
        rows(shop, "1002-req-b").await?,
    );
    r.pass &= r.body_runs == 1 && r.errors == 0 && r.replays == 49;
    rounds.push(r);

    // Round 3: the insert commits, the answer is lost (504); the client retries.
    let before = runs();
    shop.time_out_after_insert.store(true, Ordering::SeqCst);
    let first = http.order(1003, "req-c", 1500).await?;
    let first_failed = first.status == StatusCode::GATEWAY_TIMEOUT;
    let retry = http.order(1003, "req-c", 1500).await?;
    let answers = [first, retry];
    let mut r = tally(
        "fail after write, retry",
        &answers,
        runs() - before,
        rows(shop, "1003-req-c").await?,
    );
    r.pass &= first_failed && r.errors == 1 && r.replays == 1;
    rounds.push(r);

    // Round 4: the idempotency store is down; the unique index decides.
    (shop.outage)(true);
    let before = runs();
    let mut answers = Vec::new();
    for _ in 0..10 {
        answers.push(http.order(1004, "req-d", 7700).await?);
    }
    (shop.outage)(false);
    recovered(shop).await?;
    let mut r = tally(
        "store down, backstop only",
        &answers,
        runs() - before,
        rows(shop, "1004-req-d").await?,
    );
    r.pass &= r.errors == 0 && r.replays == 9;
    rounds.push(r);

    // A payment callback delivered five times at once.
    let order: serde_json::Value =
        serde_json::from_str(&http.order(1005, "req-e", 2500).await?.body)?;
    let order_no = order["order_no"].as_str().unwrap_or_default().to_owned();
    let callback =
        format!(r#"{{"order_no":"{order_no}","pay_no":"PAY-{order_no}","amount":2500}}"#);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..5 {
        let (http, callback) = (http.clone(), callback.clone());
        tasks.spawn(async move {
            let a = http
                .send(Method::POST, "/payments/callback", &[], &callback)
                .await;
            a.map(|a| a.body).map_err(|e| e.to_string())
        });
    }
    let (mut applied, mut already) = (0, 0);
    for body in tasks.join_all().await {
        let body = body?;
        applied += usize::from(body.contains("\"applied\""));
        already += usize::from(body.contains("already_applied"));
    }
    let payments: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM payments WHERE order_no = ?")
        .bind(&order_no)
        .fetch_one(&shop.db)
        .await?;

    // A form submitted twice with one token.
    let issued = http.send(Method::GET, "/forms/feedback", &[], "").await?;
    if !issued.status.is_success() {
        // Posting an empty token would only show as a puzzling `(409, 409)`.
        return Err(format!(
            "issuing the form's token: {} {}",
            issued.status, issued.body
        )
        .into());
    }
    let issued: serde_json::Value = serde_json::from_str(&issued.body)?;
    let form = format!(
        r#"{{"token":"{}","text":"fast delivery"}}"#,
        issued["token"].as_str().unwrap_or_default()
    );
    let a = http
        .send(Method::POST, "/forms/feedback", &[], &form)
        .await?;
    let b = http
        .send(Method::POST, "/forms/feedback", &[], &form)
        .await?;

    let metrics = http.send(Method::GET, "/metrics", &[], "").await?.body;
    Ok(Report {
        rounds,
        callbacks: (applied, already, payments),
        form: (a.status.as_u16(), b.status.as_u16()),
        metrics,
    })
}

/// Prints the report the way the quickstart does, and a `/metrics` excerpt.
pub(crate) fn print(report: &Report, namespace: &str) {
    println!(
        "{:<27} {:>8} {:>11} {:>8} {:>7} {:>7}  verdict",
        "round (over HTTP)", "requests", "body runs", "replays", "errors", "orders"
    );
    for r in &report.rounds {
        println!(
            "{:<27} {:>8} {:>11} {:>8} {:>7} {:>7}  {}",
            r.name,
            r.requests,
            r.body_runs,
            r.replays,
            r.errors,
            r.orders,
            if r.pass { "PASS" } else { "FAIL" }
        );
    }
    let (applied, already, payments) = report.callbacks;
    println!();
    println!(
        "payment callback x5: {applied} applied, {already} already applied, {payments} payment row"
    );
    println!(
        "form submitted twice with one token: {} then {}",
        report.form.0, report.form.1
    );
    println!();
    println!("/metrics (excerpt):");
    for line in report.metrics.lines() {
        let ours = line.contains(&format!("scope=\"{namespace}:order-create\""));
        let seed = line.starts_with("idem_interception_rate")
            || line.starts_with("idem_backstop_hits")
            || line.starts_with("idem_top_key_repeats");
        if (ours && line.starts_with("idem_calls_total")) || seed {
            println!("  {line}");
        }
    }
}
