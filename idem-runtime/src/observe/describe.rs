//! Descriptions and units of idem's metrics, sent to the installed recorder when
//! a handle is built (install the recorder first), and the histogram buckets we
//! recommend for `idem_store_seconds`.

use metrics::Unit;

/// Bucket bounds (seconds) for `idem_store_seconds`: a store operation costs
/// 0.1–2 ms on a healthy local Redis or database, tens of ms across a region,
/// and is cut at the operation budget (1 s by default). The bounds resolve all
/// three and the timeout. An exporter that defaults to summaries (like
/// `metrics-exporter-prometheus`) needs them set explicitly:
///
/// ```text
/// metrics_exporter_prometheus::PrometheusBuilder::new()
///     .set_buckets_for_metric(
///         Matcher::Full("idem_store_seconds".into()),
///         idem::observe::STORE_SECONDS_BUCKETS,
///     )?
///     .install()?;
/// ```
pub const STORE_SECONDS_BUCKETS: &[f64] = &[
    0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Registers the description and unit of every idem metric with the current
/// recorder.
pub(crate) fn describe() {
    metrics::describe_counter!(
        "idem_calls_total",
        Unit::Count,
        "Guarded calls by technique, scope and outcome (executed, replayed, backstop, ...)"
    );
    metrics::describe_histogram!(
        "idem_store_seconds",
        Unit::Seconds,
        "Duration of one idempotency store operation attempt, by store and op"
    );
    metrics::describe_counter!(
        "idem_store_errors_total",
        Unit::Count,
        "Failed idempotency store operation attempts, by store and op"
    );
}
