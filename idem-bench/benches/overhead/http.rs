//! The HTTP rows: one `POST /orders` over a real loopback socket (hyper client,
//! pooled HTTP/1.1 connections, axum server), through idem's
//! `IdempotencyLayer` (A), a bare axum handler (B), and the peer users would
//! pick, `axum-idempotent` 0.6 in its header mode (C), all in memory (idem's
//! `MemoryStore`, the peer's ruts `MokaStore` session store) so the rows
//! compare the HTTP work, not a store. First call: a fresh key per request.
//! Duplicate: a replay of one of 1,000 keys set-up finished.
//!
//! The peer needs a session: set-up opens one (`POST /session`) and every
//! request carries its cookie, as its docs require. It deduplicates per
//! session and is best-effort (its README: concurrent copies can both run);
//! idem's rows pay for the claim that makes them exactly-once. Its header mode
//! also leaves the body out of the check, so it never reads a body; A reads
//! it to fingerprint it (a changed body under the same key is `422`), and D is
//! idem with the body left out of the fingerprint, as C does.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::post;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::Env;
use crate::harness::{Op, Side, op};

const DUP_KEYS: u64 = 1_000;
/// Side D: the peer's semantics (its header mode ignores the body).
const NO_BODY: &str = "D idem layer, body not fingerprinted (as C's header mode)";

type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// A server on a fresh loopback port (runs until the process ends).
async fn serve(app: Router) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(format!("http://{addr}/orders"))
}

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(128)
        .build_http()
}

/// The business: a counter and a small JSON body, `201`.
fn orders() -> Router {
    let n = Arc::new(AtomicU64::new(0));
    Router::new().route(
        "/orders",
        post(move || {
            let n = n.clone();
            async move {
                let id = n.fetch_add(1, Ordering::Relaxed);
                let body = format!(r#"{{"order":{id},"sku":"A","qty":1}}"#);
                (
                    StatusCode::CREATED,
                    [("content-type", "application/json")],
                    body,
                )
            }
        }),
    )
}

/// `POST url` with `key` (and `cookie`); checks the status and the replay mark.
async fn post_key(
    client: &HttpClient,
    url: &str,
    key: &str,
    cookie: Option<&str>,
    replay: Option<bool>,
) -> anyhow::Result<Option<String>> {
    let mut req = http::Request::post(url)
        .header("idempotency-key", key)
        .header("content-type", "application/json");
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    let req = req.body(Full::new(Bytes::from_static(br#"{"sku":"A","qty":1}"#)))?;
    let resp = client.request(req).await?;
    anyhow::ensure!(
        resp.status() == StatusCode::CREATED,
        "status {}",
        resp.status()
    );
    let replayed = resp.headers().get("idempotent-replayed").is_some()
        || resp.headers().get("idempotency-replayed").is_some();
    if let Some(want) = replay {
        anyhow::ensure!(replayed == want, "replayed {replayed}, expected {want}");
    }
    let cookie = resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .find_map(|v| Some(v.to_str().ok()?.split(';').next()?.to_owned()));
    std::hint::black_box(resp.into_body().collect().await?.to_bytes());
    Ok(cookie)
}

/// One side: `url` (and a session `cookie`), keys from `key(i)`.
fn side(
    name: &'static str,
    url: String,
    cookie: Option<String>,
    replay: Option<bool>,
    key: impl Fn(u64) -> String + Send + Sync + 'static,
) -> Side {
    let (client, url, cookie) = (client(), Arc::new(url), Arc::new(cookie));
    let key = Arc::new(key);
    let op: Op = op(move |i| {
        let (client, url, cookie, key) = (client.clone(), url.clone(), cookie.clone(), key.clone());
        async move {
            post_key(&client, &url, &key(i), cookie.as_deref(), replay).await?;
            Ok(())
        }
    });
    Side { name, op }
}

/// The servers (idem, bare, the peer, idem without the body in the
/// fingerprint); returns their URLs and the peer's session cookie.
async fn servers(env: &Env) -> anyhow::Result<(String, String, String, String, String)> {
    let idem = idem::Idem::builder()
        .store(idem::MemoryStore::new())
        .namespace(env.ns.clone())
        .build()?;
    let layer = idem::http::IdempotencyLayer::new(idem)
        .scene("orders")
        .lease(Duration::from_secs(5))
        .ttl(Duration::from_secs(3_600));
    let a = serve(orders().layer(layer.clone())).await?;
    // The peer's header mode never reads the body: D fingerprints without it,
    // so the layer does not read it either.
    let no_body = idem::http::Fingerprinted {
        body: false,
        ..Default::default()
    };
    let d = serve(orders().layer(layer.scene("orders-d").fingerprint(no_body))).await?;
    let b = serve(orders()).await?;
    let store = Arc::new(ruts::store::moka::MokaStore::builder().build());
    let cookie = ruts::CookieOptions::build()
        .name("session")
        .max_age(3_600)
        .path("/");
    let options = axum_idempotent::IdempotentOptions::default()
        .use_idempotency_key_header(Some("Idempotency-Key"), true)
        .expire_after(3_600);
    let peer = orders()
        .route(
            "/session",
            post(
                |s: ruts::Session<ruts::store::moka::MokaStore>| async move {
                    let ttl = ruts::store::Ttl::new(3_600).expect("ttl");
                    s.set("user", &String::from("bench"), ttl, None).await.ok();
                    StatusCode::CREATED
                },
            ),
        )
        .layer(axum_idempotent::IdempotentLayer::<
            ruts::store::moka::MokaStore,
        >::new(options))
        .layer(ruts::SessionLayer::new(store).with_cookie_options(cookie))
        .layer(tower_cookies::CookieManagerLayer::new());
    let c = serve(peer).await?;
    let session = c.replace("/orders", "/session");
    let cookie = post_key(&client(), &session, "session", None, None)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the peer set no session cookie"))?;
    Ok((a, b, c, d, cookie))
}

pub(crate) async fn first(env: &Env) -> anyhow::Result<Vec<Side>> {
    let (a, b, c, d, cookie) = servers(env).await?;
    let tag = env.tag.clone();
    let (t1, t2, t3, t4) = (tag.clone(), tag.clone(), tag.clone(), tag);
    Ok(vec![
        side("A idem layer (memory)", a, None, Some(false), move |i| {
            format!("{t1}-a-{i}")
        }),
        side("B bare axum handler", b, None, None, move |i| {
            format!("{t2}-b-{i}")
        }),
        side(
            "C axum-idempotent 0.6 (moka)",
            c,
            Some(cookie),
            Some(false),
            move |i| format!("{t3}-c-{i}"),
        ),
        side(NO_BODY, d, None, Some(false), move |i| {
            format!("{t4}-d-{i}")
        }),
    ])
}

pub(crate) async fn duplicate(env: &Env) -> anyhow::Result<Vec<Side>> {
    let (a, b, c, d, cookie) = servers(env).await?;
    let (ca, cc) = (client(), client());
    for k in 0..DUP_KEYS {
        post_key(&ca, &a, &format!("d-{k}"), None, Some(false)).await?;
        post_key(&ca, &d, &format!("d-{k}"), None, Some(false)).await?;
        post_key(&cc, &c, &format!("d-{k}"), Some(&cookie), Some(false)).await?;
    }
    let key = |i: u64| format!("d-{}", i % DUP_KEYS);
    Ok(vec![
        side("A idem layer (memory)", a, None, Some(true), key),
        side("B bare axum handler", b, None, None, key),
        side(
            "C axum-idempotent 0.6 (moka)",
            c,
            Some(cookie),
            Some(true),
            key,
        ),
        side(NO_BODY, d, None, Some(true), key),
    ])
}
