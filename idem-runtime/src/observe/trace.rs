//! W3C trace context that travels with a message: the `traceparent` (and
//! `tracestate`) the outbox stores beside a message, the relay sends as
//! broker headers, and the consumer loops read back.
//!
//! It travels with or without the `otel` feature, so a service can turn
//! tracing on later without losing the context of messages already in
//! flight. Where it comes from when a message is enqueued
//! ([`TraceContext::current`]):
//!
//! - with `otel`, the current `tracing` span's OpenTelemetry context (a
//!   `tracing-opentelemetry` layer must be installed);
//! - otherwise, or when that span has none, the context set for the running
//!   task with [`TraceContext::scope`]: the `Idempotency-Key` layer (feature
//!   `axum`) sets it from the request's `traceparent` header, and a handler
//!   can do the same ([`TraceContext::parse`]).
//!
//! A malformed `traceparent` is ignored (`None`), never an error: it must not
//! cost a message.

use std::future::Future;

/// The header (and column) holding the W3C `traceparent`.
pub const TRACEPARENT: &str = "traceparent";
/// The header (and column) holding the W3C `tracestate`.
pub const TRACESTATE: &str = "tracestate";

/// Longest `tracestate` kept (the W3C recommendation for propagation); a
/// longer one is dropped, the `traceparent` kept.
const MAX_TRACESTATE: usize = 512;

/// A valid W3C trace context: a `traceparent` of version `00`
/// (`00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`, ids not all
/// zero) and an optional `tracestate`.
///
/// ```
/// use idem::observe::TraceContext;
/// let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// let cx = TraceContext::parse(tp, Some("congo=t61rcWkgMzE")).unwrap();
/// assert_eq!(cx.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
/// assert_eq!(cx.span_id(), "00f067aa0ba902b7");
/// assert!(cx.sampled());
/// assert!(TraceContext::parse("not a traceparent", None).is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TraceContext {
    traceparent: String,
    tracestate: Option<String>,
}

tokio::task_local! {
    static CURRENT: Option<TraceContext>;
}

impl TraceContext {
    /// The context of `traceparent` and `tracestate` (as received in headers
    /// or read from the outbox), or `None` when the `traceparent` is
    /// malformed. Upper-case hex is accepted and stored lower-case; an empty
    /// or over-long (512 bytes) `tracestate` is dropped.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<TraceContext> {
        let tp = traceparent.trim().to_ascii_lowercase();
        let b = tp.as_bytes();
        let hex = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_hexdigit);
        let zero = |r: std::ops::Range<usize>| b[r].iter().all(|c| *c == b'0');
        let ok = b.len() == 55
            && tp.starts_with("00-")
            && b[35] == b'-'
            && b[52] == b'-'
            && hex(3..35)
            && hex(36..52)
            && hex(53..55)
            && !zero(3..35)
            && !zero(36..52);
        if !ok {
            return None;
        }
        let tracestate = tracestate
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.len() <= MAX_TRACESTATE && s.is_ascii())
            .map(str::to_owned);
        Some(TraceContext {
            traceparent: tp,
            tracestate,
        })
    }

    /// The `traceparent` header value.
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The `tracestate` header value, if any.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The trace id, 32 lower-case hex digits.
    pub fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }

    /// The parent span's id, 16 lower-case hex digits.
    pub fn span_id(&self) -> &str {
        &self.traceparent[36..52]
    }

    /// The `sampled` flag.
    pub fn sampled(&self) -> bool {
        u8::from_str_radix(&self.traceparent[53..55], 16).is_ok_and(|f| f & 1 == 1)
    }

    /// The trace context a message enqueued now carries: with the `otel`
    /// feature the current `tracing` span's OpenTelemetry context when it
    /// has a valid one, else the one [`scope`](Self::scope) set for this
    /// task; `None` when neither is there.
    pub fn current() -> Option<TraceContext> {
        #[cfg(feature = "otel")]
        if let Some(cx) = super::otel::span_context(&tracing::Span::current()) {
            return Some(cx);
        }
        Self::scoped()
    }

    /// The context [`scope`](Self::scope) set for this task, if any.
    pub fn scoped() -> Option<TraceContext> {
        CURRENT.try_with(Clone::clone).ok().flatten()
    }

    /// Runs `fut` with `cx` as the task's current trace context (for
    /// [`current`](Self::current) without the `otel` feature, or outside
    /// any span that has one). `None` runs it with none.
    ///
    /// ```
    /// use idem::observe::TraceContext;
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    /// let cx = TraceContext::parse(tp, None);
    /// let seen = TraceContext::scope(cx.clone(), async { TraceContext::scoped() }).await;
    /// assert_eq!(seen, cx);
    /// # });
    /// ```
    pub async fn scope<F: Future>(cx: Option<TraceContext>, fut: F) -> F::Output {
        CURRENT.scope(cx, fut).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn parses_valid_and_ignores_malformed() {
        let cx = TraceContext::parse(&TP.to_uppercase(), Some(" ")).unwrap();
        assert_eq!(cx.traceparent(), TP);
        assert_eq!(cx.tracestate(), None, "an empty tracestate is dropped");
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
        ] {
            assert_eq!(TraceContext::parse(bad, None), None, "{bad}");
        }
        let long = "a=".to_owned() + &"b".repeat(600);
        let cx = TraceContext::parse(TP, Some(&long)).unwrap();
        assert_eq!(cx.tracestate(), None, "an over-long tracestate is dropped");
        assert!(
            !TraceContext::parse(&TP.replace("-01", "-00"), None)
                .unwrap()
                .sampled()
        );
    }

    #[tokio::test]
    async fn scope_sets_the_task_context() {
        assert_eq!(TraceContext::scoped(), None);
        let cx = TraceContext::parse(TP, Some("k=v"));
        let seen = TraceContext::scope(cx.clone(), async { TraceContext::current() }).await;
        assert_eq!(seen, cx);
    }
}
