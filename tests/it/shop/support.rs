//! The shop example (`examples/shop/`), compiled once into the test binary so
//! every shop test drives the same router, server and demo the example runs
//! (one copy: the order handler's scene is registered once).

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

pub use crate::http::support::Answer;

#[path = "../../../examples/shop/app.rs"]
pub mod app;
#[path = "../../../examples/shop/demo.rs"]
pub mod demo;
#[path = "../../../examples/shop/run.rs"]
#[allow(dead_code)] // `Config::from_env` is `main.rs`'s
pub mod run;

/// The process's Prometheus recorder (global: idem reports through the
/// `metrics` facade; other tests' series carry other scopes).
pub fn prometheus() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            PrometheusBuilder::new()
                .install_recorder()
                .expect("no other global recorder in the test binary")
        })
        .clone()
}

/// A shop served by its own hardened server on a fresh loopback port, with a
/// pooled client; stopped on drop.
pub struct Running {
    pub opened: run::Opened,
    pub serving: app::server::Serving,
    client: HyperClient<HttpConnector, Full<Bytes>>,
}

/// Opens a fresh shop (its own SQLite file and namespace) on `store` and
/// serves it with `limits`.
pub async fn start(store: app::IdemStore, limits: app::server::Limits) -> Running {
    let config = run::Config {
        store,
        db_path: None,
        namespace: None,
    };
    let opened = run::open(&config, Some(prometheus()))
        .await
        .expect("open the shop");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let serving = app::server::spawn(listener, app::router(opened.shop.clone()), limits);
    let client = HyperClient::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_millis(500))
        .build_http();
    Running {
        opened,
        serving,
        client,
    }
}

impl Running {
    pub fn shop(&self) -> &app::Shop {
        &self.opened.shop
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.serving.addr)
    }

    /// Sends one request and reads the whole answer (60 s at most).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Answer {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base()));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req.body(Full::new(body.into())).expect("request");
        let resp = tokio::time::timeout(Duration::from_secs(60), self.client.request(req))
            .await
            .expect("answered within 60 s")
            .expect("request sent");
        let (parts, body) = resp.into_parts();
        let bytes = body.collect().await.expect("body").to_bytes();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    /// `POST /orders` as user `user` with key `key`.
    pub async fn order(&self, user: &str, key: &str, body: &str) -> Answer {
        let headers = [
            ("x-user-id", user),
            ("idempotency-key", key),
            ("content-type", "application/json"),
        ];
        self.send(Method::POST, "/orders", &headers, body.to_owned())
            .await
    }

    /// One number from the shop's business database.
    pub async fn count(&self, sql: &'static str) -> i64 {
        sqlx::query_scalar(sql)
            .fetch_one(&self.shop().db)
            .await
            .expect("count")
    }
}
