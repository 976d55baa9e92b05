//! `GET /metrics`: the process's metrics in Prometheus text format
//! (`metrics-exporter-prometheus`: `idem_calls_total`, `idem_store_seconds`, ...)
//! followed by the seed's three monitoring figures from `Idem::stats()`:
//!
//! - `idem_interception_rate`: (replayed + waited + backstop +
//!   duplicate_message) / calls;
//! - `idem_backstop_hits`: duplicates only the unique index caught;
//! - `idem_top_key_repeats{scope,key}`: the most-repeated keys, as
//!   `idem::observe::render_top_keys` exports them (guaranteed counts, hashed
//!   keys).

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use super::Shop;

/// How many top keys are shown.
const TOP: usize = 5;

pub(super) async fn render(State(shop): State<Shop>) -> impl IntoResponse {
    let mut text = shop
        .prometheus
        .as_ref()
        .map(|p| p.render())
        .unwrap_or_default();
    text.push_str(&seed_figures(&shop.idem.stats()));
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}

/// The three figures as Prometheus gauges.
pub(crate) fn seed_figures(s: &idem::Stats) -> String {
    let mut out = String::new();
    out.push_str("# HELP idem_interception_rate (replayed + waited + backstop + duplicate_message) / calls\n");
    out.push_str("# TYPE idem_interception_rate gauge\n");
    out.push_str(&format!(
        "idem_interception_rate {:.4}\n",
        s.interception_rate()
    ));
    out.push_str(
        "# HELP idem_backstop_hits duplicates the unique index caught (outcome=\"backstop\")\n",
    );
    out.push_str("# TYPE idem_backstop_hits gauge\n");
    out.push_str(&format!("idem_backstop_hits {}\n", s.backstop_hits()));
    // The library's export: guaranteed counts (count - error), only keys
    // certainly above every unlisted one, keys hashed.
    out.push_str(&idem::observe::render_top_keys(s, TOP));
    out
}
