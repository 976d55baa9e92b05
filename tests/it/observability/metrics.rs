//! The metric names and labels are a public contract (DESIGN §6): dashboards and
//! alerts are built on them. This test records what the guard emits through the
//! `metrics` facade and checks names, labels and counts.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use idem::{Concurrency, Error, FaultyStore, MemoryStore};
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};

use crate::support::{AppError, handle};

/// Keeps every counter and histogram by name and sorted labels.
#[derive(Default)]
pub(crate) struct Captured {
    counters: Mutex<BTreeMap<String, Arc<AtomicU64>>>,
    histograms: Mutex<BTreeMap<String, Arc<Samples>>>,
}

#[derive(Default)]
struct Samples(Mutex<Vec<f64>>);

impl metrics::HistogramFn for Samples {
    fn record(&self, value: f64) {
        self.0.lock().unwrap().push(value);
    }
}

fn render(key: &Key) -> String {
    let mut labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    labels.sort();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl Recorder for Captured {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let c = self
            .counters
            .lock()
            .unwrap()
            .entry(render(key))
            .or_default()
            .clone();
        Counter::from_arc(c)
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let h = self
            .histograms
            .lock()
            .unwrap()
            .entry(render(key))
            .or_default()
            .clone();
        Histogram::from_arc(h)
    }
}

impl Captured {
    pub(crate) fn counter(&self, rendered: &str) -> u64 {
        self.counters
            .lock()
            .unwrap()
            .get(rendered)
            .map_or(0, |c| c.load(Ordering::SeqCst))
    }
    pub(crate) fn samples(&self, rendered: &str) -> usize {
        self.histograms
            .lock()
            .unwrap()
            .get(rendered)
            .map_or(0, |h| h.0.lock().unwrap().len())
    }
}

#[test]
fn calls_and_store_metrics_have_the_documented_names_and_labels() {
    let rec = Captured::default();
    let ns = metrics::with_local_recorder(&rec, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let faulty = Arc::new(FaultyStore::new(MemoryStore::new()));
            let idem = handle(faulty.clone(), "obs");
            let ns = idem.namespace().to_owned();
            for _ in 0..3 {
                idem.guard("pay", &[&"k"])
                    .run(|| async { Ok::<_, AppError>(1) })
                    .await
                    .unwrap();
            }
            let r = idem
                .guard("pay", &[&"k2"])
                .run(|| async { Err::<u8, _>(AppError::Business("no".into())) })
                .await;
            assert!(r.is_err());
            faulty.set_unavailable(true);
            let r = idem
                .guard("pay", &[&"k3"])
                .concurrent(Concurrency::Reject)
                .run(|| async { Ok::<_, AppError>(1) })
                .await;
            assert!(matches!(
                r,
                Err(AppError::Idem(Error::StoreUnavailable { .. }))
            ));
            ns
        })
    });
    let scope = format!("{ns}:pay");
    let calls = |outcome: &str| {
        rec.counter(&format!(
            "idem_calls_total{{outcome={outcome},scope={scope},technique=idempotent}}"
        ))
    };
    assert_eq!(calls("executed"), 1);
    assert_eq!(calls("replayed"), 2);
    assert_eq!(calls("released"), 1);
    assert_eq!(calls("failed"), 1);
    assert!(rec.samples("idem_store_seconds{op=claim,store=memory}") >= 5);
    assert!(rec.samples("idem_store_seconds{op=complete,store=memory}") >= 1);
    assert!(rec.samples("idem_store_seconds{op=release,store=memory}") >= 1);
    assert!(rec.counter("idem_store_errors_total{op=claim,store=memory}") >= 1);
}
