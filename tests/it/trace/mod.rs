//! One trace per order: the guarded request, its outbox message, the relay's
//! `send` and the consumer's `process` form one connected trace (feature
//! `otel`, read back from OpenTelemetry's in-memory exporter); a republished
//! message's duplicate delivery links to the same producer; a batch links to
//! each message's producer; and without an OpenTelemetry layer the stored
//! column and the broker headers still carry the caller's `traceparent`.

pub mod context;
pub mod flow;
pub mod republish;
pub mod support;
