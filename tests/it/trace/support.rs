//! The in-memory OpenTelemetry pipeline of the trace tests, and the spans it
//! exported, as a tree.

use std::collections::HashMap;

use opentelemetry::trace::{SpanId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt as _;

/// A `tracing` subscriber with a `tracing-opentelemetry` layer exporting to
/// memory, the default of this thread while held (run the test on a
/// current-thread runtime so every task it spawns reports here).
pub(crate) struct Otel {
    exporter: InMemorySpanExporter,
    _provider: SdkTracerProvider,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Otel {
    pub(crate) fn install() -> Otel {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("idem-it"));
        let subscriber = tracing_subscriber::registry().with(layer);
        Otel {
            exporter,
            _provider: provider,
            _guard: crate::support::capture::capture(subscriber),
        }
    }

    /// Every span ended so far.
    pub(crate) fn spans(&self) -> Spans {
        Spans(self.exporter.get_finished_spans().expect("exported spans"))
    }
}

/// Exported spans.
pub(crate) struct Spans(pub(crate) Vec<SpanData>);

impl Spans {
    /// The spans named `name` with every attribute of `attrs`.
    pub(crate) fn with(&self, name: &str, attrs: &[(&str, &str)]) -> Vec<&SpanData> {
        self.0
            .iter()
            .filter(|s| {
                s.name == name && attrs.iter().all(|(k, v)| attr(s, k).as_deref() == Some(*v))
            })
            .collect()
    }

    /// The one span named `name` with every attribute of `attrs`.
    pub(crate) fn one(&self, name: &str, attrs: &[(&str, &str)]) -> &SpanData {
        let found = self.with(name, attrs);
        assert_eq!(
            found.len(),
            1,
            "one `{name}` span with {attrs:?}:\n{}",
            self.tree()
        );
        found[0]
    }

    /// The span with id `id`.
    pub(crate) fn by_id(&self, id: SpanId) -> Option<&SpanData> {
        self.0.iter().find(|s| s.span_context.span_id() == id)
    }

    /// The spans as trees (children under their parent), with their
    /// `messaging.*`, `idem.*` attributes and links.
    pub(crate) fn tree(&self) -> String {
        let mut kids: HashMap<SpanId, Vec<&SpanData>> = HashMap::new();
        let mut roots = Vec::new();
        for s in &self.0 {
            if self.by_id(s.parent_span_id).is_some() {
                kids.entry(s.parent_span_id).or_default().push(s);
            } else {
                roots.push(s);
            }
        }
        let mut out = String::new();
        for r in roots {
            walk(r, 0, &kids, &mut out);
        }
        out
    }
}

fn walk(s: &SpanData, depth: usize, kids: &HashMap<SpanId, Vec<&SpanData>>, out: &mut String) {
    use std::fmt::Write as _;
    let pad = "  ".repeat(depth);
    let cx = &s.span_context;
    let _ = writeln!(
        out,
        "{pad}{} [trace {} span {} parent {}{}]",
        s.name,
        cx.trace_id(),
        cx.span_id(),
        s.parent_span_id,
        if s.parent_span_is_remote {
            " remote"
        } else {
            ""
        }
    );
    let mut attrs: Vec<String> = s
        .attributes
        .iter()
        .filter(|kv| {
            kv.key.as_str().starts_with("messaging.") || kv.key.as_str().starts_with("idem.")
        })
        .map(|kv| format!("{}={}", kv.key, kv.value))
        .collect();
    attrs.sort();
    for a in attrs {
        let _ = writeln!(out, "{pad}  · {a}");
    }
    for l in &s.links.links {
        let _ = writeln!(
            out,
            "{pad}  ↪ link trace {} span {}",
            l.span_context.trace_id(),
            l.span_context.span_id()
        );
    }
    let mut children = kids.get(&cx.span_id()).cloned().unwrap_or_default();
    children.sort_by_key(|c| c.start_time);
    for c in children {
        walk(c, depth + 1, kids, out);
    }
}

/// Attribute `key` of `s`, as text.
pub(crate) fn attr(s: &SpanData, key: &str) -> Option<String> {
    s.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

/// The span ids `s` links to.
pub(crate) fn links(s: &SpanData) -> Vec<SpanId> {
    s.links
        .links
        .iter()
        .map(|l| l.span_context.span_id())
        .collect()
}
