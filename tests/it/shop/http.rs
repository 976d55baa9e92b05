//! The shop example's router (`examples/shop/app.rs`, built here as the example
//! builds it) driven by its own `--demo` over loopback; then `/metrics` must
//! show the three seed figures with the values the demo produced.

use crate::http::support::serve;
use crate::shop::support::{app, demo, prometheus};

/// The value of the first sample line starting with `prefix`.
fn sample(metrics: &str, prefix: &str) -> f64 {
    find(metrics, prefix).unwrap_or_else(|| panic!("no `{prefix}` in /metrics:\n{metrics}"))
}

fn find(metrics: &str, prefix: &str) -> Option<f64> {
    let line = metrics.lines().find(|l| l.starts_with(prefix))?;
    Some(line.rsplit(' ').next()?.parse().expect("a number"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_rounds_pass_and_metrics_show_the_seed_figures() {
    let dir = crate::support::tempdir::TempDir::new();
    let ns = crate::support::unique_ns("shop");
    let shop = app::open(
        &dir.path().join("shop.db"),
        &ns,
        &app::IdemStore::from_env(),
        Some(prometheus()),
    )
    .await
    .expect("open the shop");
    let b = &shop.backends;
    println!(
        "shop: idempotency store {}, business db {}",
        b.idem_store, b.business_db
    );
    let server = serve(app::router(shop.clone())).await;
    let report = demo::run(&shop, &format!("http://{}", server.addr))
        .await
        .expect("demo ran");
    demo::print(&report, &ns);

    // The four rounds, as the seed's checklist expects them.
    let figures: Vec<_> = report
        .rounds
        .iter()
        .map(|r| {
            (
                r.requests,
                r.body_runs,
                r.replays,
                r.errors,
                r.orders,
                r.pass,
            )
        })
        .collect();
    assert_eq!(
        figures,
        [
            (10, 1, 9, 0, 1, true),
            (50, 1, 49, 0, 1, true),
            (2, 2, 1, 1, 1, true),
            (10, 10, 9, 0, 1, true),
        ]
    );
    assert_eq!(
        report.callbacks,
        (1, 4, 1),
        "one payment for five deliveries"
    );
    assert_eq!(report.form, (201, 409), "one submission per token");

    // `/metrics` shows what `Idem::stats()` counted, and the counters agree.
    let stats = shop.idem.stats();
    let m = &report.metrics;
    let rate = sample(m, "idem_interception_rate ");
    assert!(
        (rate - stats.interception_rate()).abs() < 1e-3,
        "{rate} vs {stats:?}"
    );
    assert_eq!(
        sample(m, "idem_backstop_hits "),
        stats.backstop_hits() as f64
    );
    assert_eq!(
        stats.backstop_hits(),
        10,
        "round 3's retry and round 4's nine + one"
    );
    let top = &stats.top_keys[0];
    assert_eq!(top.key, format!("{ns}:order-create:1002:req-b"));
    let top_line = format!(
        "idem_top_key_repeats{{scope=\"{ns}:order-create\",key=\"{}\"}}",
        idem::observe::key_hash(&top.key)
    );
    assert_eq!(sample(m, &top_line), top.guaranteed() as f64);
    assert!(!m.contains(&top.key), "no raw key in /metrics");
    assert_eq!(top.count, 49);
    let calls = |outcome: &str| {
        let prefix = format!(
            "idem_calls_total{{technique=\"idempotent\",scope=\"{ns}:order-create\",outcome=\"{outcome}\"}}"
        );
        find(m, &prefix).unwrap_or(0.0)
    };
    // Round 3's retry is a guarded backstop hit; round 4's ten calls ran with
    // the store down (`degraded`), nine of them stopped by the constraint
    // (backstop hits on the degraded path).
    assert_eq!(calls("backstop"), 1.0);
    assert_eq!(calls("degraded"), 10.0);
    let hits = |path: &str| {
        let prefix = format!(
            "idem_backstop_hits_total{{technique=\"idempotent\",scope=\"{ns}:order-create\",path=\"{path}\"}}"
        );
        find(m, &prefix).unwrap_or(0.0)
    };
    assert_eq!((hits("guarded"), hits("degraded")), (1.0, 9.0));
    assert_eq!(calls("replayed") + calls("waited"), 9.0 + 49.0);
    assert_eq!(
        calls("executed") + calls("degraded") + calls("released"),
        3.0 + 10.0 + 1.0
    );
    assert!(stats.interception_rate() > 0.9, "{stats:?}");
}
