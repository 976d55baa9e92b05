//! The bridge to OpenTelemetry (feature `otel`), through `tracing-opentelemetry`:
//! a span's context as a [`TraceContext`], a [`TraceContext`] as a span's
//! remote parent or link, and attributes set on a span directly. Every call
//! is a no-op when no `tracing-opentelemetry` layer is installed.

// Enqueues need a SQL database; sends and deliveries a broker feature.
#![cfg_attr(
    not(all(feature = "sql", any(feature = "rabbitmq", feature = "nats"))),
    allow(dead_code)
)]

use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Key, Value};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::trace::TraceContext;

/// `span`'s OpenTelemetry context as W3C trace context, when valid.
pub(crate) fn span_context(span: &tracing::Span) -> Option<TraceContext> {
    if span.is_disabled() {
        return None;
    }
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    if !sc.is_valid() {
        return None;
    }
    let tp = format!(
        "00-{:032x}-{:016x}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags()
    );
    let state = sc.trace_state().header();
    TraceContext::parse(&tp, Some(&state))
}

/// `cx` as a remote span context (`None` if OpenTelemetry rejects its ids).
fn remote(cx: &TraceContext) -> Option<SpanContext> {
    let trace = TraceId::from_hex(cx.trace_id()).ok()?;
    let span = SpanId::from_hex(cx.span_id()).ok()?;
    let flags = TraceFlags::new(u8::from(cx.sampled()));
    let state = cx
        .tracestate()
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    Some(SpanContext::new(trace, span, flags, true, state))
}

/// Makes `cx` the parent of `span` (before it is first entered).
pub(crate) fn set_parent(span: &tracing::Span, cx: &TraceContext) {
    if let Some(sc) = remote(cx) {
        let parent = opentelemetry::Context::new().with_remote_span_context(sc);
        // Only fails without the layer, or once the span started: nothing to do.
        let _ = span.set_parent(parent);
    }
}

/// Links `span` to `cx`.
pub(crate) fn add_link(span: &tracing::Span, cx: &TraceContext) {
    if let Some(sc) = remote(cx) {
        span.add_link(sc);
    }
}

/// Sets attribute `key` on `span`.
pub(crate) fn set(span: &tracing::Span, key: &'static str, value: impl Into<Value>) {
    span.set_attribute(Key::from_static_str(key), value);
}

/// The `idem.*` attributes of a guarded call's `idem` span: technique, scope,
/// the key's hash (never the raw key), outcome, fence, and whether the
/// caller got a stored result instead of running the body.
pub(crate) fn idem_attrs(
    span: &tracing::Span,
    technique: super::Technique,
    key: &crate::key::Key,
    outcome: super::CallOutcome,
    fence: Option<crate::fence::Fence>,
) {
    use super::CallOutcome as O;
    set(span, "idem.technique", technique.as_str());
    set(span, "idem.scope", key.scope().to_owned());
    set(
        span,
        "idem.key_hash",
        super::key_hash(key.as_str()).to_string(),
    );
    set(span, "idem.outcome", outcome.as_str());
    set(
        span,
        "idem.replayed",
        matches!(outcome, O::Replayed | O::Waited),
    );
    if let Some(f) = fence {
        set(
            span,
            "idem.fence",
            i64::try_from(f.get()).unwrap_or(i64::MAX),
        );
    }
}
