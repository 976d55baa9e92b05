//! [`Idempotency`]: the service the layer wraps around the route. One keyed
//! request is one guarded call (`Idem::guard`), counted with
//! `technique="http"`; the handler's response is its body's value.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderName, Method, Request, StatusCode};
use serde::Serialize;

use super::backstop::{ErrorCause, LayerConflict};
use super::body::{self, BoxError, Collected, ReadError};
use super::extract::{IdempotencyKey, rejection};
use super::key_header::{self, BadKey};
use super::layer::Settings;
use super::problem::{Named, from_error, problem};
use super::stored::StoredResponse;
use crate::error::Error;
use crate::handle::Idem;
use crate::hooks::Hooks;
use crate::observe::{TRACEPARENT, TRACESTATE, Technique, TraceContext};

/// The W3C trace context headers as names (a lookup by `&str` parses it).
static TRACEPARENT_NAME: HeaderName = HeaderName::from_static(TRACEPARENT);
static TRACESTATE_NAME: HeaderName = HeaderName::from_static(TRACESTATE);

/// The service [`IdempotencyLayer`](super::IdempotencyLayer) builds around `S`.
#[derive(Clone)]
pub struct Idempotency<S> {
    inner: S,
    idem: Idem,
    settings: Arc<Settings>,
}

impl<S> fmt::Debug for Idempotency<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Idempotency")
            .field("scene", &self.settings.scene)
            .finish_non_exhaustive()
    }
}

impl<S> Idempotency<S> {
    pub(super) fn new(inner: S, idem: Idem, settings: Arc<Settings>) -> Self {
        Idempotency {
            inner,
            idem,
            settings,
        }
    }
}

/// Why the guarded body did not produce a response to store.
enum NotStored<E> {
    /// An idem error (mismatch, in progress, store down): answered by the layer.
    Idem(Error),
    /// A response whose status is not kept (a `5xx`, a `429`, ...): returned
    /// as is, and the key released.
    Pass(Response),
    /// A response carrying an [`ErrorCause`] on a route with a backstop: a
    /// hit of the constraint if the engine finds its violation in the cause,
    /// else returned as is, and the key released.
    Caused(Response, ErrorCause),
    /// The inner service failed.
    Inner(E),
}

/// The engine's view of a failed body for backstop detection.
fn cause_of<E>(e: &NotStored<E>) -> Option<&(dyn std::error::Error + 'static)> {
    match e {
        NotStored::Caused(_, cause) => Some(cause.error()),
        _ => None,
    }
}

impl<E> From<Error> for NotStored<E> {
    fn from(e: Error) -> Self {
        NotStored::Idem(e)
    }
}

/// What the fingerprint hashes (canonically, through `Guard::fingerprint`).
#[derive(Serialize)]
struct Payload<'a> {
    method: Option<&'a str>,
    path: Option<&'a str>,
    body: Option<Raw<'a>>,
}

/// Body bytes, hashed as bytes rather than as a sequence of numbers.
struct Raw<'a>(&'a [u8]);

impl Serialize for Raw<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

fn is_safe(m: &Method) -> bool {
    matches!(
        *m,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    )
}

impl<S, B, ResBody> tower_service::Service<Request<B>> for Idempotency<S>
where
    S: tower_service::Service<Request<Body>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        // The clone that was driven to readiness serves this request (tower's rule).
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let (idem, settings) = (self.idem.clone(), self.settings.clone());
        // The request's W3C trace context becomes the task's (what an outbox
        // enqueue stores when no OpenTelemetry span provides one).
        let header = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
        let trace = header(&TRACEPARENT_NAME)
            .and_then(|tp| TraceContext::parse(tp, header(&TRACESTATE_NAME)));
        let fut = serve(inner, idem, settings, req);
        match trace {
            Some(cx) => Box::pin(TraceContext::scope(Some(cx), fut)),
            None => Box::pin(fut),
        }
    }
}

/// One request through the layer (see the module docs' table).
async fn serve<S, B, ResBody>(
    inner: S,
    idem: Idem,
    cfg: Arc<Settings>,
    req: Request<B>,
) -> Result<Response, S::Error>
where
    S: tower_service::Service<Request<Body>, Response = Response<ResBody>> + Send,
    S::Future: Send,
    S::Error: Send,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    let (parts, body) = req.into_parts();
    if is_safe(&parts.method) {
        return pass(inner, Request::from_parts(parts, Body::new(body))).await;
    }
    let key = match key_header::read(&parts.headers, cfg.max_key_len) {
        Ok(key) => key,
        Err(BadKey::Missing) if !cfg.required => {
            return pass(inner, Request::from_parts(parts, Body::new(body))).await;
        }
        Err(bad) => return Ok(rejection(bad)),
    };
    let body = match RequestBody::take(body, &cfg).await {
        Ok(body) => body,
        Err(answer) => return Ok(answer),
    };
    let scope = cfg
        .scope
        .as_ref()
        .and_then(|f| f(&parts))
        .unwrap_or_default();
    let over = cfg.fingerprint;
    let payload = Payload {
        method: over.method.then(|| parts.method.as_str()),
        path: over
            .path
            .then(|| parts.uri.path_and_query().map_or("/", |p| p.as_str())),
        body: match &body {
            RequestBody::Read(bytes) if over.body => Some(Raw(bytes)),
            _ => None,
        },
    };
    // Starts from the handle's settings for the scene; the layer's own win.
    let mut guard = idem
        .guard(&cfg.scene, &[&scope, &key])
        .concurrent(cfg.concurrent)
        .fingerprint(&payload)
        .technique(Technique::Http);
    cfg.durations.apply(&mut guard.policy);
    guard.policy.backstop.clone_from(&cfg.backstop);
    let lookup = match (&cfg.on_conflict, &body) {
        (Some(f), RequestBody::Read(bytes)) if cfg.looks_up() => {
            let mut copy = Request::from_parts(parts.clone(), bytes.clone());
            checked(&mut copy, &key);
            Some((f.clone(), copy))
        }
        _ => None,
    };
    let hooks = Hooks::new().detect(cause_of).on_conflict(LayerConflict {
        lookup,
        settings: cfg.clone(),
    });
    // The fingerprint is taken: the handler's request takes the parts (a
    // clone copied every extension, hyper's and axum's, per request), and is
    // built only if the handler runs (a duplicate never builds it).
    let handler_body = body;
    // The first response keeps all its headers and its whole body; only its
    // stored copy is trimmed (or marked "body not kept").
    let mut first: Option<(http::response::Parts, Body)> = None;
    let slot = &mut first;
    let body_cfg = cfg.clone();
    let client_key = &key;
    let out = guard
        // The response never reads its fence: the cheaper claim (Redis:
        // one native `SET … NX PX … GET`) serves it.
        .run_with(hooks, move || async move {
            let mut inner = inner;
            let mut req = Request::from_parts(parts, handler_body.into_body());
            checked(&mut req, client_key);
            let response = inner.call(req).await.map_err(NotStored::Inner)?;
            let (parts, body) = response.into_parts();
            if body_cfg.backstop.is_some()
                && let Some(cause) = parts.extensions.get::<ErrorCause>().cloned()
            {
                let response = Response::from_parts(parts, Body::new(body));
                return Err(NotStored::Caused(response, cause));
            }
            if !body_cfg.keeps(parts.status) {
                let response = Response::from_parts(parts, Body::new(body));
                return Err(NotStored::Pass(response));
            }
            let keep = &body_cfg.keep;
            let (stored, body) = match body::collect(body, keep.body_limit).await {
                Collected::Whole(bytes) => {
                    let stored = StoredResponse::new(&parts, keep, &bytes);
                    (stored, Body::from(bytes))
                }
                // Kept, but its body cannot be: the key still ends as done.
                Collected::Passed(why, body) => {
                    (StoredResponse::without_body(&parts, keep, why), body)
                }
            };
            *slot = Some((parts, body));
            Ok(stored)
        })
        .await;
    match out {
        Ok(outcome) if !outcome.is_replay() => match first {
            Some((parts, body)) => Ok(Response::from_parts(parts, body)),
            None => Ok(outcome.into_inner().into_response()),
        },
        Ok(outcome) => Ok(outcome.into_inner().into_response()),
        Err(NotStored::Pass(response) | NotStored::Caused(response, _)) => Ok(response),
        Err(NotStored::Idem(e)) => {
            let named = match cfg.raw_keys {
                true => Named::Raw,
                false => Named::Client(&key),
            };
            Ok(from_error(&e, cfg.retry_after, named))
        }
        Err(NotStored::Inner(e)) => Err(e),
    }
}

/// Hands the handler's `IdempotencyKey` extractor the key the layer checked
/// (under the layer's own length limit). Only a request that reaches a
/// handler gets it: a duplicate, answered from the record, pays for no copy
/// of the key and no extension map.
fn checked<B>(req: &mut Request<B>, key: &str) {
    req.extensions_mut()
        .insert(IdempotencyKey::checked(key.to_owned()));
}

/// A keyed request's body: read whole, or left for the handler.
enum RequestBody {
    Read(Bytes),
    Unread(Body),
}

impl RequestBody {
    /// Reads `body` only when something needs the bytes: the fingerprint, or
    /// a copy of the request for an `on_conflict` lookup.
    /// Otherwise the layer holds no copy of it: a first call streams it to
    /// the handler, and a duplicate (whose handler never runs) never reads
    /// it. `Err` is the answer to a body that is too large or unreadable.
    async fn take<B>(body: B, cfg: &Settings) -> Result<Self, Response>
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let limit = cfg.max_request_body;
        if cfg.fingerprint.body || cfg.looks_up() {
            return body::buffer(body, limit)
                .await
                .map(RequestBody::Read)
                .map_err(|e| unreadable(e, limit));
        }
        if body.size_hint().lower() > limit as u64 {
            return Err(unreadable(ReadError::TooLarge, limit));
        }
        Ok(RequestBody::Unread(Body::new(body)))
    }

    /// The body to hand the handler.
    fn into_body(self) -> Body {
        match self {
            RequestBody::Read(bytes) => Body::from(bytes),
            RequestBody::Unread(body) => body,
        }
    }
}

/// The answer to a request body the layer could not read.
fn unreadable(e: ReadError, limit: usize) -> Response {
    match e {
        ReadError::TooLarge => {
            let detail = format!("request bodies are limited to {limit} bytes");
            problem(
                StatusCode::PAYLOAD_TOO_LARGE,
                "request body too large",
                &detail,
            )
        }
        ReadError::Broken(e) => {
            let detail = format!("the request body could not be read: {e}");
            problem(StatusCode::BAD_REQUEST, "unreadable request body", &detail)
        }
    }
}

/// An unguarded request: straight to the inner service.
async fn pass<S, ResBody>(mut inner: S, req: Request<Body>) -> Result<Response, S::Error>
where
    S: tower_service::Service<Request<Body>, Response = Response<ResBody>>,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    Ok(inner.call(req).await?.map(Body::new))
}
