//! Quiet, safe observability defaults: the `idem` span is at DEBUG, so a
//! service logging at INFO sees nothing per call; at DEBUG the span carries the
//! key's hash, never the key (request data), unless the handle opted in; the
//! metric descriptions and units reach the recorder when a handle is built.

use std::sync::{Arc, Mutex};

use idem::{FaultyStore, Hooks, MemoryStore};
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata as TMeta, Subscriber};

use crate::support::{AppError, unique_ns};

/// Keeps every span and event field (name = value) at or above `max`.
#[derive(Clone)]
struct Capture {
    max: Level,
    seen: Arc<Mutex<Vec<(String, String)>>>,
    next: Arc<Mutex<u64>>,
}

impl Capture {
    fn new(max: Level) -> Self {
        Capture {
            max,
            seen: Arc::default(),
            next: Arc::new(Mutex::new(1)),
        }
    }
    fn fields(&self) -> Vec<(String, String)> {
        self.seen.lock().unwrap().clone()
    }
}

struct Fields<'a>(&'a Mutex<Vec<(String, String)>>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        self.0
            .lock()
            .unwrap()
            .push((f.name().to_owned(), format!("{v:?}")));
    }
    fn record_str(&mut self, f: &Field, v: &str) {
        self.0
            .lock()
            .unwrap()
            .push((f.name().to_owned(), v.to_owned()));
    }
}

impl Subscriber for Capture {
    fn enabled(&self, m: &TMeta<'_>) -> bool {
        *m.level() <= self.max
    }
    fn new_span(&self, a: &Attributes<'_>) -> Id {
        self.seen
            .lock()
            .unwrap()
            .push(("span".into(), a.metadata().name().to_owned()));
        a.record(&mut Fields(&self.seen));
        let mut n = self.next.lock().unwrap();
        *n += 1;
        Id::from_u64(*n)
    }
    fn record(&self, _: &Id, r: &Record<'_>) {
        r.record(&mut Fields(&self.seen));
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, e: &Event<'_>) {
        e.record(&mut Fields(&self.seen));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// A few calls whose key holds an email: executed, replayed, then a store
/// outage under `degrade`, which logs a warning naming the key.
fn calls_under(sub: Capture, raw_keys: bool) -> String {
    crate::support::capture::pin_dispatchers();
    tracing::subscriber::with_default(sub, || {
        tracing::callsite::rebuild_interest_cache();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let faulty = Arc::new(FaultyStore::new(MemoryStore::new()));
            let idem = idem::Idem::builder()
                .shared_store(faulty.clone())
                .namespace(unique_ns("quiet"))
                .log_raw_keys(raw_keys)
                .build()
                .unwrap();
            for _ in 0..2 {
                idem.guard("signup", &[&"alice@example.com"])
                    .run(|| async { Ok::<_, AppError>(1) })
                    .await
                    .unwrap();
            }
            faulty.set_unavailable(true);
            let r = idem
                .guard("signup", &[&"alice@example.com", &"2"])
                .backstop("uk_signup_email")
                .degrade_to_backstop()
                .run_with(Hooks::new().detect(idem::std_error), || async {
                    Ok::<_, AppError>(2)
                })
                .await;
            assert_eq!(r.unwrap().into_inner(), 2);
            idem.key("signup", &[&"alice@example.com"])
                .as_str()
                .to_owned()
        })
    })
}

#[test]
fn no_span_at_info_and_no_raw_key_at_any_level_by_default() {
    let info = Capture::new(Level::INFO);
    calls_under(info.clone(), false);
    let got = info.fields();
    assert!(
        !got.iter().any(|(n, v)| n == "span" && v == "idem"),
        "{got:?}"
    );
    assert!(!got.iter().any(|(_, v)| v.contains("alice")), "{got:?}");
    assert!(
        got.iter().any(|(n, _)| n == "message"),
        "the outage warning is logged at INFO: {got:?}"
    );

    let debug = Capture::new(Level::TRACE);
    let key = calls_under(debug.clone(), false);
    let got = debug.fields();
    let spans = got
        .iter()
        .filter(|(n, v)| n == "span" && v == "idem")
        .count();
    assert_eq!(spans, 3, "one span per call at DEBUG: {got:?}");
    let hash = idem::observe::key_hash(&key).to_string();
    assert!(got.iter().any(|(n, v)| n == "key" && *v == hash), "{got:?}");
    assert!(!got.iter().any(|(_, v)| v.contains("alice")), "{got:?}");
}

#[test]
fn raw_keys_only_when_the_handle_opts_in() {
    let debug = Capture::new(Level::DEBUG);
    let key = calls_under(debug.clone(), true);
    let got = debug.fields();
    assert!(got.iter().any(|(n, v)| n == "key" && *v == key), "{got:?}");
}

/// Records the descriptions a recorder is given.
#[derive(Default)]
struct Described(Mutex<Vec<(String, Option<Unit>)>>);

impl Recorder for Described {
    fn describe_counter(&self, k: KeyName, u: Option<Unit>, _: SharedString) {
        self.0.lock().unwrap().push((k.as_str().to_owned(), u));
    }
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, k: KeyName, u: Option<Unit>, _: SharedString) {
        self.0.lock().unwrap().push((k.as_str().to_owned(), u));
    }
    fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
        Counter::noop()
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

#[test]
fn building_a_handle_describes_the_metrics_with_units() {
    let rec = Described::default();
    metrics::with_local_recorder(&rec, || {
        idem::Idem::builder()
            .store(MemoryStore::new())
            .build()
            .unwrap()
    });
    let got = rec.0.lock().unwrap().clone();
    assert_eq!(
        got,
        vec![
            ("idem_calls_total".to_owned(), Some(Unit::Count)),
            ("idem_store_seconds".to_owned(), Some(Unit::Seconds)),
            ("idem_store_errors_total".to_owned(), Some(Unit::Count)),
        ]
    );
}
