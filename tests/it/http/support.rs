//! A real HTTP server on loopback and a real client (hyper) for the HTTP tests.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// A server on an ephemeral loopback port, stopped on drop.
pub struct Server {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves `app` on 127.0.0.1 (a fresh port).
pub async fn serve(app: Router) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.expect("serve");
    });
    Server { addr, task }
}

/// One answer, read whole.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    pub fn is_replay(&self) -> bool {
        self.header("idempotent-replayed") == Some("true")
    }
    /// The problem-details body.
    pub fn problem(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("problem json")
    }

    /// A problem-details answer with this status.
    pub fn assert_problem(&self, status: StatusCode) {
        assert_eq!(self.status, status, "{self:?}");
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json"),
            "{self:?}"
        );
        let v: serde_json::Value = serde_json::from_str(&self.body).expect("problem json");
        assert_eq!(v["status"], status.as_u16(), "{v}");
        assert!(v["title"].as_str().is_some_and(|t| !t.is_empty()), "{v}");
    }
}

/// A client for one server (pooled connections, HTTP/1.1).
#[derive(Clone)]
pub struct Client {
    base: String,
    inner: Arc<HyperClient<HttpConnector, Full<Bytes>>>,
}

impl Client {
    pub fn new(server: &Server) -> Self {
        let inner = HyperClient::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(5))
            .build_http();
        Client {
            base: format!("http://{}", server.addr),
            inner: Arc::new(inner),
        }
    }

    /// Sends a request with these headers and body.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &[u8])],
        body: impl Into<Bytes>,
    ) -> Answer {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req.body(Full::new(body.into())).expect("request");
        let resp = tokio::time::timeout(Duration::from_secs(60), self.inner.request(req))
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

    /// Sends a request whose answer may fail: `Err` when no head arrived,
    /// `Ok((status, Err))` when the body failed mid-way.
    pub async fn send_lossy(
        &self,
        path: &str,
        headers: &[(&str, &[u8])],
    ) -> Result<(StatusCode, Result<String, String>), String> {
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(format!("{}{path}", self.base));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req.body(Full::new(Bytes::new())).expect("request");
        let resp = tokio::time::timeout(Duration::from_secs(60), self.inner.request(req))
            .await
            .expect("answered within 60 s")
            .map_err(|e| e.to_string())?;
        let (parts, body) = resp.into_parts();
        let body = match body.collect().await {
            Ok(b) => Ok(String::from_utf8_lossy(&b.to_bytes()).into_owned()),
            Err(e) => Err(e.to_string()),
        };
        Ok((parts.status, body))
    }

    /// `POST path` with an `Idempotency-Key` and a JSON body.
    pub async fn post(&self, path: &str, key: &str, body: &str) -> Answer {
        let headers: [(&str, &[u8]); 2] = [
            ("idempotency-key", key.as_bytes()),
            ("content-type", b"application/json"),
        ];
        self.send(Method::POST, path, &headers, body.to_owned())
            .await
    }
}
