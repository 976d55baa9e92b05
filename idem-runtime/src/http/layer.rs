//! [`IdempotencyLayer`]: the settings of one guarded route (or router).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, StatusCode, header, request};

use super::problem::DEFAULT_RETRY_AFTER;
use super::service::Idempotency;
use super::stored::DEFAULT_STORED_BODY_LIMIT;
use crate::handle::Idem;
use crate::policy::Concurrency;

/// What the request fingerprint covers (all by default). A retry whose
/// fingerprint differs from the first request's is answered `422`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprinted {
    /// The method.
    pub method: bool,
    /// The path and query.
    pub path: bool,
    /// The body bytes.
    pub body: bool,
}

impl Default for Fingerprinted {
    fn default() -> Self {
        Fingerprinted {
            method: true,
            path: true,
            body: true,
        }
    }
}

type ScopeFn = dyn Fn(&request::Parts) -> Option<String> + Send + Sync;
type StatusFn = dyn Fn(StatusCode) -> bool + Send + Sync;

/// The settings the service reads on every request.
#[derive(Clone)]
pub(super) struct Settings {
    pub(super) scene: String,
    pub(super) required: bool,
    /// The durations set on the layer; unset ones come from the handle's
    /// configuration for the layer's scene (see `idem::settings`).
    pub(super) durations: crate::settings::Settings,
    /// Wait for or reject concurrent duplicates.
    pub(super) concurrent: Concurrency,
    pub(super) retry_after: Duration,
    pub(super) scope: Option<Arc<ScopeFn>>,
    pub(super) fingerprint: Fingerprinted,
    pub(super) replay_headers: Vec<HeaderName>,
    pub(super) store_status: Arc<StatusFn>,
    pub(super) max_key_len: usize,
    pub(super) max_request_body: usize,
    pub(super) max_stored_body: usize,
}

/// A `tower::Layer` guarding requests by their `Idempotency-Key` header (see
/// the [module docs](super) for every answer). Clone it onto as many routes as
/// share its settings; each route usually gets its own `scene`.
#[derive(Clone)]
#[must_use]
pub struct IdempotencyLayer {
    idem: Idem,
    settings: Arc<Settings>,
}

impl fmt::Debug for IdempotencyLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.settings;
        f.debug_struct("IdempotencyLayer")
            .field("scene", &s.scene)
            .field("required", &s.required)
            .field("durations", &s.durations)
            .field("concurrent", &s.concurrent)
            .field("fingerprint", &s.fingerprint)
            .field("replay_headers", &s.replay_headers)
            .finish_non_exhaustive()
    }
}

impl IdempotencyLayer {
    /// A layer on `idem`'s store: scene `http`, key required, 24 h replay
    /// window, 30 s lease, duplicates wait up to 5 s for the first request
    /// (the durations the layer does not set come from the handle's
    /// configuration for its scene, then these defaults), `5xx`
    /// released, keys up to 255 bytes, request bodies up to 1 MiB, response
    /// bodies stored up to 256 KiB, `Content-Type` and `Location` replayed.
    pub fn new(idem: Idem) -> Self {
        IdempotencyLayer {
            idem,
            settings: Arc::new(Settings {
                scene: "http".into(),
                required: true,
                durations: crate::settings::Settings::NONE,
                concurrent: Concurrency::Wait,
                retry_after: DEFAULT_RETRY_AFTER,
                scope: None,
                fingerprint: Fingerprinted::default(),
                replay_headers: vec![header::CONTENT_TYPE, header::LOCATION],
                store_status: Arc::new(|s: StatusCode| !s.is_server_error()),
                max_key_len: 255,
                max_request_body: 1024 * 1024,
                max_stored_body: DEFAULT_STORED_BODY_LIMIT,
            }),
        }
    }

    /// Changes the settings (copied first if a clone of the layer shares them).
    fn with(mut self, f: impl FnOnce(&mut Settings)) -> Self {
        f(Arc::make_mut(&mut self.settings));
        self
    }

    /// The scene keys are rendered under (`namespace:scene:scope:key`); one
    /// per route keeps routes' keys apart and their counters separate.
    pub fn scene(self, scene: impl Into<String>) -> Self {
        let scene = scene.into();
        self.with(|s| s.scene = scene)
    }

    /// Requests without the header pass through unguarded (default: `400`).
    pub fn optional(self) -> Self {
        self.with(|s| s.required = false)
    }

    /// Scopes keys by what `f` extracts from the request (a user or tenant id
    /// from a header or an extension set by the auth layer); `None` is the
    /// anonymous scope.
    pub fn scope_by(
        self,
        f: impl Fn(&request::Parts) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.with(|s| s.scope = Some(Arc::new(f)))
    }

    /// How long a response is replayed (default 24 h).
    pub fn ttl(self, ttl: Duration) -> Self {
        self.with(|s| s.durations.ttl = Some(ttl))
    }

    /// Claim life without renewal (default 30 s; renewed while the handler runs).
    pub fn lease(self, lease: Duration) -> Self {
        self.with(|s| s.durations.lease = Some(lease))
    }

    /// How long a concurrent duplicate waits for the first request (default
    /// 5 s, or the lease if shorter); past it, `409`.
    pub fn wait(self, wait: Duration) -> Self {
        self.with(|s| s.durations.wait = Some(wait))
    }

    /// Concurrent duplicates get `409` with `Retry-After` at once.
    pub fn reject_concurrent(self) -> Self {
        self.with(|s| s.concurrent = Concurrency::Reject)
    }

    /// The `Retry-After` of a `409` (default 1 s; rounded up to whole seconds).
    pub fn retry_after(self, d: Duration) -> Self {
        self.with(|s| s.retry_after = d)
    }

    /// What the fingerprint covers (default: method, path and body).
    pub fn fingerprint(self, over: Fingerprinted) -> Self {
        self.with(|s| s.fingerprint = over)
    }

    /// Also replays this response header (beside `Content-Type` and `Location`).
    pub fn replay_header(self, name: HeaderName) -> Self {
        self.with(|s| s.replay_headers.push(name))
    }

    /// Which statuses are stored and replayed (default: all but `5xx`). A
    /// response whose status is not stored is returned and its key released, so
    /// a retry runs the handler again.
    pub fn store_status(self, f: impl Fn(StatusCode) -> bool + Send + Sync + 'static) -> Self {
        self.with(|s| s.store_status = Arc::new(f))
    }

    /// The longest key accepted (default 255 bytes).
    pub fn max_key_len(self, n: usize) -> Self {
        self.with(|s| s.max_key_len = n)
    }

    /// The largest request body buffered (default 1 MiB); larger is `413`.
    pub fn max_request_body(self, n: usize) -> Self {
        self.with(|s| s.max_request_body = n)
    }

    /// The largest response body stored (default 256 KiB). A larger body is
    /// returned in full but not stored: the key is released and a retry runs
    /// the handler again.
    pub fn max_stored_body(self, n: usize) -> Self {
        self.with(|s| s.max_stored_body = n)
    }
}

impl<S> tower_layer::Layer<S> for IdempotencyLayer {
    type Service = Idempotency<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Idempotency::new(inner, self.idem.clone(), self.settings.clone())
    }
}
