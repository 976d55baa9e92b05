//! [`IdempotencyLayer`]: the settings of one guarded route (or router).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, StatusCode, request};

use super::backstop::{ConflictFn, conflict_fn};
use super::keep::Keeping;
use super::key_header::DEFAULT_MAX_KEY_LEN;
use super::problem::DEFAULT_RETRY_AFTER;
use super::service::Idempotency;
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
    /// Which responses are kept, which of their headers, how much body.
    pub(super) keep: Keeping,
    /// A status predicate that replaces `keep`'s (`store_status`).
    pub(super) store_status: Option<Arc<StatusFn>>,
    pub(super) max_key_len: usize,
    pub(super) max_request_body: usize,
    /// Problem details may show the internal key and fingerprints.
    pub(super) raw_keys: bool,
    /// The business unique constraint backing the route (`backstop`).
    pub(super) backstop: Option<std::borrow::Cow<'static, str>>,
    /// The existing result's lookup after a backstop hit (`on_conflict`).
    pub(super) on_conflict: Option<Arc<ConflictFn>>,
}

impl Settings {
    /// The keeping rule's verdict on a status (or the `store_status` override).
    pub(super) fn keeps(&self, status: StatusCode) -> bool {
        match &self.store_status {
            Some(f) => f(status),
            None => self.keep.keeps(status),
        }
    }

    /// Whether a constraint hit may run the `on_conflict` lookup, which gets
    /// a copy of the request: the layer then reads the body whatever the
    /// fingerprint covers.
    pub(super) fn looks_up(&self) -> bool {
        self.backstop.is_some() && self.on_conflict.is_some()
    }
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
            .field("keep", &s.keep)
            .finish_non_exhaustive()
    }
}

impl IdempotencyLayer {
    /// A layer on `idem`'s store: scene `http`, key required, 24 h replay
    /// window, 30 s lease, duplicates wait up to 5 s for the first request
    /// (the durations the layer does not set come from the handle's
    /// configuration for its scene, then these defaults), responses kept by
    /// the default [`Keeping`] rule (2xx–4xx but 401, 403, 408, 425, 429;
    /// bodies up to 256 KiB; the default header allow-list), keys up to 255
    /// bytes, request bodies up to 1 MiB, no internal key in problem details.
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
                keep: Keeping::default(),
                store_status: None,
                max_key_len: DEFAULT_MAX_KEY_LEN,
                max_request_body: 1024 * 1024,
                raw_keys: false,
                backstop: None,
                on_conflict: None,
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
    /// from a header or an extension set by the auth layer). `None` is the
    /// anonymous scope, one key space that every request `f` returns `None`
    /// for shares: two anonymous clients sending the same key get one
    /// response. Return `None` only where requests have no owner, and refuse
    /// unauthenticated requests before this layer otherwise.
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

    /// The longest `Retry-After` of a `409` (default 60 s). A `409` for a
    /// key in progress tells the holder's lease left, rounded up to whole
    /// seconds: a holder that died frees the key when its lease runs out, a
    /// live one (its lease renewed while it runs) usually finishes sooner.
    /// A short lease bounds both (see the crate's operations guide).
    pub fn retry_after(self, d: Duration) -> Self {
        self.with(|s| s.retry_after = d)
    }

    /// What the fingerprint covers (default: method, path and body). A body
    /// left out is not read by the layer (unless an `on_conflict` lookup needs
    /// a copy of the request): a first call streams it to the handler, and a
    /// duplicate never reads it.
    pub fn fingerprint(self, over: Fingerprinted) -> Self {
        self.with(|s| s.fingerprint = over)
    }

    /// Also replays this response header (beside the default allow-list,
    /// [`DEFAULT_REPLAYED`](super::DEFAULT_REPLAYED); never one of
    /// [`NEVER_REPLAYED`](super::NEVER_REPLAYED)).
    pub fn replay_header(self, name: HeaderName) -> Self {
        self.with(|s| s.keep = s.keep.clone().header(name))
    }

    /// The whole keeping rule: statuses, headers, body limit (see [`Keeping`]).
    pub fn keeping(self, keep: Keeping) -> Self {
        self.with(|s| s.keep = keep)
    }

    /// Keep `401` and `403` responses too (default: released).
    pub fn keep_auth_failures(self, keep: bool) -> Self {
        self.with(|s| s.keep = s.keep.clone().keep_auth_failures(keep))
    }

    /// Replaces the keeping rule's status verdict with `f` (default: 2xx–4xx
    /// but 401, 403, 408, 425 and 429). A response whose status is not kept is
    /// returned and its key released, so a retry runs the handler again.
    pub fn store_status(self, f: impl Fn(StatusCode) -> bool + Send + Sync + 'static) -> Self {
        self.with(|s| s.store_status = Some(Arc::new(f)))
    }

    /// Problem details show the internal key (`namespace:scene:scope:key`)
    /// and the fingerprints: for debugging only (default: at most the
    /// client's own key).
    pub fn problem_raw_keys(self, raw: bool) -> Self {
        self.with(|s| s.raw_keys = raw)
    }

    /// The longest key accepted (default 255 bytes).
    pub fn max_key_len(self, n: usize) -> Self {
        self.with(|s| s.max_key_len = n)
    }

    /// The largest request body buffered (default 1 MiB); larger is `413`. A
    /// body the layer does not read (see [`fingerprint`](Self::fingerprint))
    /// is `413` only when its declared length is larger; otherwise the
    /// handler's own limits apply to it.
    pub fn max_request_body(self, n: usize) -> Self {
        self.with(|s| s.max_request_body = n)
    }

    /// The largest response body stored (default 256 KiB). A kept response
    /// with a larger body (or one whose stream fails) is returned in full and
    /// still ends the key, stored as "body not kept": a repeat gets `409`
    /// problem details naming the first status, never a second handler run.
    pub fn max_stored_body(self, n: usize) -> Self {
        self.with(|s| s.keep = s.keep.clone().body_limit(n))
    }
}

impl IdempotencyLayer {
    /// The business unique constraint behind the route's first effect, as
    /// `#[idempotent(backstop = ..)]`: when the handler's insert violates it
    /// (the store lost the first request's record), the handler's response
    /// carrying an [`ErrorCause`](super::ErrorCause) is not returned; the
    /// request gets [`on_conflict`](Self::on_conflict)'s response, stored for
    /// later repeats, or without one a `409` problem (`Error::Duplicate`).
    /// A response carrying another error releases the key, as an `Err` of an
    /// `#[idempotent]` function does.
    pub fn backstop(self, constraint: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        let constraint = constraint.into();
        self.with(|s| s.backstop = Some(constraint))
    }

    /// The lookup of the existing result after a [`backstop`](Self::backstop)
    /// hit: given the request (its body as bytes), the response that stands
    /// for the first one (the existing order, say). It must use a fresh
    /// connection: the handler's transaction may be aborted.
    pub fn on_conflict<F, Fut, R>(self, lookup: F) -> Self
    where
        F: Fn(http::Request<bytes::Bytes>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = R> + Send + 'static,
        R: axum::response::IntoResponse,
    {
        let lookup = conflict_fn(lookup);
        self.with(|s| s.on_conflict = Some(lookup))
    }
}

impl<S> tower_layer::Layer<S> for IdempotencyLayer {
    type Service = Idempotency<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Idempotency::new(inner, self.idem.clone(), self.settings.clone())
    }
}
