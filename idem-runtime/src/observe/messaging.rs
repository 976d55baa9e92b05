//! The messaging spans of the outbox and the consumer loops, named and
//! attributed as OpenTelemetry's messaging conventions prescribe: `create`
//! around [`Outbox::enqueue`](crate::outbox::Outbox::enqueue), `send` around
//! the relay's publish of one message (a child of the message's creation
//! context), `process` around one delivery handled by a consumer loop (a
//! child of, and linked to, the message's creation context) or one batch
//! (linked to each message's creation context).
//!
//! The spans exist with the `otel` feature only, at INFO: without it a
//! [`MsgSpan`] is empty and its calls compile to nothing, while the trace
//! context itself still travels (`trace.rs`).

// Enqueues need a SQL database; sends and deliveries a broker feature.
#![cfg_attr(
    not(all(feature = "sql", any(feature = "rabbitmq", feature = "nats"))),
    allow(dead_code)
)]

use std::future::Future;

use super::trace::TraceContext;

/// One messaging span, or nothing without the `otel` feature.
#[derive(Debug, Clone)]
pub(crate) struct MsgSpan {
    #[cfg(feature = "otel")]
    span: tracing::Span,
}

/// One delivery of a `process` span: its message id and creation context.
pub(crate) type Member<'a> = (Option<&'a str>, Option<&'a TraceContext>);

impl MsgSpan {
    /// `create` for a message enqueued on `topic` under `id`.
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    pub(crate) fn create(topic: &str, id: &str) -> MsgSpan {
        MsgSpan {
            #[cfg(feature = "otel")]
            span: tracing::info_span!(
                target: "idem::outbox",
                "create",
                otel.kind = "producer",
                messaging.operation.type = "create",
                messaging.operation.name = "create",
                messaging.destination.name = topic,
                messaging.message.id = id,
            ),
        }
    }

    /// `send` of message `id` on `topic` to broker `system`, a child of its
    /// creation context.
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    pub(crate) fn send(
        system: &str,
        topic: &str,
        id: &str,
        creation: Option<&TraceContext>,
    ) -> MsgSpan {
        #[cfg(feature = "otel")]
        {
            let span = tracing::info_span!(
                target: "idem::outbox",
                parent: None,
                "send",
                otel.kind = "producer",
                messaging.system = system,
                messaging.operation.type = "send",
                messaging.operation.name = "send",
                messaging.destination.name = topic,
                messaging.message.id = id,
                idem.verdict = tracing::field::Empty,
            );
            if let Some(cx) = creation {
                super::otel::set_parent(&span, cx);
            }
            MsgSpan { span }
        }
        #[cfg(not(feature = "otel"))]
        MsgSpan {}
    }

    /// `process` of `unit` (one delivery, or a batch) from `destination` of
    /// broker `system` by consumer group `group`. One delivery: a child of
    /// its creation context, linked to it; a batch: a root linked to each.
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    pub(crate) fn process<'a>(
        system: &str,
        destination: &str,
        group: &str,
        unit: impl ExactSizeIterator<Item = Member<'a>> + Clone,
    ) -> MsgSpan {
        #[cfg(feature = "otel")]
        {
            use tracing::field::Empty;
            let span = tracing::info_span!(
                target: "idem::consume",
                parent: None,
                "process",
                otel.kind = "consumer",
                messaging.system = system,
                messaging.operation.type = "process",
                messaging.operation.name = "process",
                messaging.destination.name = destination,
                messaging.consumer.group.name = group,
                messaging.message.id = Empty,
                messaging.batch.message_count = Empty,
                idem.outcome = Empty,
            );
            if span.is_disabled() {
                return MsgSpan { span };
            }
            if unit.len() == 1 {
                if let Some((id, cx)) = unit.clone().next() {
                    if let Some(id) = id {
                        span.record("messaging.message.id", id);
                    }
                    if let Some(cx) = cx {
                        super::otel::set_parent(&span, cx);
                    }
                }
            } else {
                span.record("messaging.batch.message_count", unit.len() as u64);
            }
            for cx in unit.filter_map(|(_, cx)| cx) {
                super::otel::add_link(&span, cx);
            }
            MsgSpan { span }
        }
        #[cfg(not(feature = "otel"))]
        MsgSpan {}
    }

    /// Runs `fut` inside the span.
    pub(crate) async fn run<F: Future>(&self, fut: F) -> F::Output {
        #[cfg(feature = "otel")]
        {
            use tracing::Instrument as _;
            if !self.span.is_disabled() {
                return fut.instrument(self.span.clone()).await;
            }
        }
        fut.await
    }

    /// Records the relay's verdict on a `send` span.
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    pub(crate) fn verdict(&self, verdict: &'static str) {
        #[cfg(feature = "otel")]
        self.span.record("idem.verdict", verdict);
    }
}

/// Records a consume's `outcome` on `span` (the `process` span the call runs
/// in, if it is one; a no-op on any other span).
#[cfg(feature = "otel")]
pub(crate) fn record_outcome(span: &tracing::Span, outcome: super::CallOutcome) {
    span.record("idem.outcome", outcome.as_str());
}
