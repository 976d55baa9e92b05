//! The shop example (`examples/shop/`), compiled once into the test binary so
//! every shop test drives the same router, server and demo the example runs
//! (one copy: the order handler's scene is registered once).

use std::sync::OnceLock;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

#[path = "../../examples/shop/app.rs"]
pub mod app;
#[path = "../../examples/shop/demo.rs"]
pub mod demo;
#[path = "../../examples/shop/run.rs"]
#[allow(dead_code)] // `Config::from_env` is `main.rs`'s
pub mod run;

/// The process's Prometheus recorder (global: idem reports through the
/// `metrics` facade; other tests' series carry other scopes).
pub fn prometheus() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            PrometheusBuilder::new()
                .install_recorder()
                .expect("no other global recorder in the test binary")
        })
        .clone()
}
