//! Serving the shop with a bound on every wait a client can impose:
//! without one, a slowloris trickle, 1,000 idle sockets and a declared body
//! that never arrives would each hold the service's resources for as long as
//! the client liked.
//!
//! | limit | default | enforced by |
//! |---|---|---|
//! | header read | 10 s | hyper's `header_read_timeout`: the whole request head, counted from when the connection starts waiting for it, so trickling bytes does not reset it |
//! | idle keep-alive | 5 s | this file: no byte read or written for that long closes the connection (gracefully: a request in flight finishes) |
//! | request body | 10 s | tower-http's `RequestBodyTimeoutLayer`: the longest gap between two body frames |
//! | body size | 64 KiB | tower-http's `RequestBodyLimitLayer`: a larger `Content-Length` is refused before any byte is read, a chunked body when it passes the limit |
//! | connections | 1,024 | a semaphore around `accept`: the next connection waits in the kernel's backlog |
//!
//! hyper counts the header timeout from the end of the previous response too,
//! so an idle connection is closed after `min(idle, header_read)`.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::RequestBodyTimeoutLayer;

use super::problem;

/// The server's timeouts and limits (defaults in the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub(crate) header_read: Duration,
    pub(crate) idle: Duration,
    pub(crate) body: Duration,
    pub(crate) max_body: usize,
    pub(crate) max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read: Duration::from_secs(10),
            idle: Duration::from_secs(5),
            body: Duration::from_secs(10),
            max_body: 64 * 1024,
            max_connections: 1024,
        }
    }
}

/// The router behind the body limits, with every error answer in one format
/// (outermost, so the limits' own refusals are converted too).
pub(crate) fn harden(router: Router, limits: &Limits) -> Router {
    router
        .layer(RequestBodyLimitLayer::new(limits.max_body))
        .layer(RequestBodyTimeoutLayer::new(limits.body))
        .layer(axum::middleware::map_response(problem::uniform))
}

/// A server running in the background; stopped (with its connections) on drop.
pub(crate) struct Serving {
    pub(crate) addr: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves `router` (hardened) on `listener` until dropped.
pub(crate) fn spawn(listener: TcpListener, router: Router, limits: Limits) -> Serving {
    let addr = listener
        .local_addr()
        .expect("a bound listener has an address");
    let task = tokio::spawn(serve(listener, router, limits));
    Serving { addr, task }
}

/// Accepts connections while fewer than `max_connections` are open.
pub(crate) async fn serve(listener: TcpListener, router: Router, limits: Limits) {
    let router = harden(router, &limits);
    let permits = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    // Owned here: aborting `serve` ends every connection with it.
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let permit = permits
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let stream = loop {
            match listener.accept().await {
                Ok((stream, _)) => break stream,
                // Out of file descriptors, or a connection reset in the
                // backlog: wait a little instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        while connections.try_join_next().is_some() {}
        let (router, limits) = (router.clone(), limits.clone());
        connections.spawn(async move {
            connection(stream, router, &limits).await;
            drop(permit);
        });
    }
}

/// One HTTP/1.1 connection, closed once idle for `limits.idle`.
async fn connection(stream: TcpStream, router: Router, limits: &Limits) {
    let _ = stream.set_nodelay(true);
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Tracked {
        inner: stream,
        activity: activity.clone(),
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read)
        .keep_alive(true);
    let conn = http.serve_connection(io, TowerToHyperService::new(router));
    tokio::pin!(conn);
    loop {
        let deadline = activity.last() + limits.idle;
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = tokio::time::sleep_until(deadline) => {
                if activity.last() + limits.idle <= Instant::now() {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                    return;
                }
            }
        }
    }
}

/// When a connection last moved a byte.
struct Activity {
    start: Instant,
    millis: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity {
            start: Instant::now(),
            millis: AtomicU64::new(0),
        }
    }
    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.millis.store(ms, Ordering::Relaxed);
    }
    fn last(&self) -> Instant {
        self.start + Duration::from_millis(self.millis.load(Ordering::Relaxed))
    }
}

/// A socket that records its activity.
struct Tracked {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
