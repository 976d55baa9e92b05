//! Test doubles for the observe tests: a `metrics` recorder and a `tracing`
//! subscriber that keep what they are given.

use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span;

/// Keeps the rendered key of every counter and histogram registration, in order.
#[derive(Default)]
pub(super) struct Seen(pub(super) Mutex<Vec<String>>);

impl metrics::Recorder for Seen {
    fn describe_counter(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn register_counter(&self, k: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        self.0.lock().unwrap().push(format!("{k}"));
        metrics::Counter::noop()
    }
    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        metrics::Gauge::noop()
    }
    fn register_histogram(
        &self,
        k: &metrics::Key,
        _: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        self.0.lock().unwrap().push(format!("{k}"));
        metrics::Histogram::noop()
    }
}

/// A subscriber that enables everything and keeps every span field set, at
/// creation or later through `Span::record`, as (name, value) pairs.
#[derive(Clone, Default)]
pub(super) struct SpanFields(Arc<Mutex<Vec<(&'static str, String)>>>);

impl SpanFields {
    pub(super) fn take(&self) -> Vec<(&'static str, String)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

struct Visitor<'a>(&'a Mutex<Vec<(&'static str, String)>>);

impl Visit for Visitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .lock()
            .unwrap()
            .push((field.name(), value.to_owned()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .lock()
            .unwrap()
            .push((field.name(), format!("{value:?}")));
    }
}

impl tracing::Subscriber for SpanFields {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &span::Attributes<'_>) -> span::Id {
        attrs.record(&mut Visitor(&self.0));
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, values: &span::Record<'_>) {
        values.record(&mut Visitor(&self.0));
    }
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}
