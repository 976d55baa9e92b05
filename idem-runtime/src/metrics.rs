//! The monitoring figures: interception rate, top conflicting keys, backstop hits.
//!
//! Every guarded call emits `idem_calls_total{technique,scope,outcome}` through the
//! `metrics` facade (export with any recorder, e.g. Prometheus) and is also counted
//! here, in process, so [`Idem::stats`](crate::Idem::stats) can answer without a
//! metrics backend. Top keys use the Space-Saving algorithm: bounded memory, and
//! any key repeated more than `calls / capacity` times is guaranteed to be listed.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

/// Outcome labels, in the order of the counters.
pub const OUTCOMES: &[&str] = &[
    "executed",
    "replayed",
    "waited",
    "in_progress",
    "mismatch",
    "backstop",
    "degraded",
    "failed",
    "released",
    "applied",
    "already_applied",
    "invalid_transition",
    "lock_busy",
    "token_invalid",
    "duplicate_message",
];

/// Outcomes that count as an intercepted duplicate.
pub const INTERCEPTED: &[&str] = &["replayed", "waited", "backstop", "duplicate_message"];

const TOP_CAPACITY: usize = 64;

/// Space-Saving summary: `TOP_CAPACITY` slots in a min-heap by count, so a key
/// not yet tracked replaces the minimum in O(log capacity) (a linear scan for the
/// minimum cost 15% of a memory-store replay in the overhead benchmark).
#[derive(Debug, Default)]
struct SpaceSaving {
    index: HashMap<String, usize>,
    slots: Vec<Slot>,
    /// Slot ids, a min-heap by count.
    heap: Vec<usize>,
    /// Slot id -> its position in `heap`.
    pos: Vec<usize>,
}

#[derive(Debug)]
struct Slot {
    key: String,
    count: u64,
    /// Overestimate: the count the slot had when this key took it over.
    error: u64,
}

impl SpaceSaving {
    fn hit(&mut self, key: &str) {
        if let Some(&s) = self.index.get(key) {
            self.slots[s].count += 1;
            self.sift_down(self.pos[s]);
            return;
        }
        if self.slots.len() < TOP_CAPACITY {
            let s = self.slots.len();
            self.slots.push(Slot {
                key: key.to_owned(),
                count: 1,
                error: 0,
            });
            self.index.insert(key.to_owned(), s);
            self.heap.push(s);
            self.pos.push(s);
            self.sift_up(s);
            return;
        }
        // Replace the minimum: the newcomer inherits its count as possible error.
        // The two key buffers are reused, so a full summary allocates nothing.
        let s = self.heap[0];
        let slot = &mut self.slots[s];
        let mut buf = match self.index.remove_entry(slot.key.as_str()) {
            Some((k, _)) => k,
            None => String::new(),
        };
        buf.clear();
        buf.push_str(key);
        slot.key.clear();
        slot.key.push_str(key);
        slot.error = slot.count;
        slot.count += 1;
        self.index.insert(buf, s);
        self.sift_down(0);
    }

    fn count(&self, i: usize) -> u64 {
        self.slots[self.heap[i]].count
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.heap.swap(i, j);
        self.pos[self.heap[i]] = i;
        self.pos[self.heap[j]] = j;
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.count(parent) <= self.count(i) {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut min = i;
            if l < n && self.count(l) < self.count(min) {
                min = l;
            }
            if r < n && self.count(r) < self.count(min) {
                min = r;
            }
            if min == i {
                return;
            }
            self.swap(i, min);
            i = min;
        }
    }
}

/// At most this many `idem_calls_total` keys are cached per handle; calls past it
/// (an unbounded set of scopes) build their key each time, as the macro would.
const CALL_KEYS_CAPACITY: usize = 1024;

/// In-process counters behind [`Stats`].
#[derive(Debug)]
pub(crate) struct Recorder {
    by_outcome: Vec<AtomicU64>,
    top: Mutex<HashMap<String, SpaceSaving>>,
    /// `idem_calls_total` keys by scope, then (technique, outcome). Keys, not
    /// registered handles: a key means the same to every recorder, so a global
    /// recorder installed after the first calls (or a thread-local one, as in
    /// `metrics::with_local_recorder`) still sees every call. The `counter!` macro
    /// built the key per call: an owned `scope` label and a label vector.
    call_keys: RwLock<CallKeys>,
}

#[derive(Debug, Default)]
struct CallKeys {
    by_scope: HashMap<Box<str>, Vec<(&'static str, &'static str, metrics::Key)>>,
    len: usize,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            by_outcome: OUTCOMES.iter().map(|_| AtomicU64::new(0)).collect(),
            top: Mutex::new(HashMap::new()),
            call_keys: RwLock::new(CallKeys::default()),
        }
    }
}

fn call_key(technique: &'static str, scope: &str, outcome: &'static str) -> metrics::Key {
    let labels = vec![
        metrics::Label::new("technique", technique),
        metrics::Label::new("scope", scope.to_owned()),
        metrics::Label::new("outcome", outcome),
    ];
    metrics::Key::from_parts("idem_calls_total", labels)
}

fn increment(key: &metrics::Key) {
    metrics::with_recorder(|r| r.register_counter(key, &METADATA).increment(1));
}

impl Recorder {
    pub(crate) fn record(
        &self,
        technique: &'static str,
        scope: &str,
        key: &str,
        outcome: &'static str,
    ) {
        if let Some(i) = OUTCOMES.iter().position(|o| *o == outcome) {
            self.by_outcome[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count_call(technique, scope, outcome);
        if INTERCEPTED.contains(&outcome) || outcome == "in_progress" || outcome == "mismatch" {
            let mut top = self.top.lock().unwrap_or_else(|p| p.into_inner());
            match top.get_mut(scope) {
                Some(ss) => ss.hit(key),
                None => top.entry(scope.to_owned()).or_default().hit(key),
            }
        }
    }

    /// `idem_calls_total{technique,scope,outcome}` += 1, with the key cached.
    fn count_call(&self, technique: &'static str, scope: &str, outcome: &'static str) {
        {
            let keys = self.call_keys.read().unwrap_or_else(|p| p.into_inner());
            if let Some(key) = keys.by_scope.get(scope).and_then(|v| {
                v.iter()
                    .find(|(t, o, _)| *t == technique && *o == outcome)
                    .map(|(_, _, k)| k)
            }) {
                increment(key);
                return;
            }
        }
        let key = call_key(technique, scope, outcome);
        increment(&key);
        let mut keys = self.call_keys.write().unwrap_or_else(|p| p.into_inner());
        if keys.len >= CALL_KEYS_CAPACITY {
            return;
        }
        let entry = keys.by_scope.entry(scope.into()).or_default();
        if !entry
            .iter()
            .any(|(t, o, _)| *t == technique && *o == outcome)
        {
            entry.push((technique, outcome, key));
            keys.len += 1;
        }
    }

    pub(crate) fn snapshot(&self) -> Stats {
        let by_outcome: BTreeMap<&'static str, u64> = OUTCOMES
            .iter()
            .zip(&self.by_outcome)
            .map(|(o, c)| (*o, c.load(Ordering::Relaxed)))
            .filter(|(_, c)| *c > 0)
            .collect();
        let top = self.top.lock().unwrap_or_else(|p| p.into_inner());
        let mut top_keys: Vec<TopKey> = top
            .iter()
            .flat_map(|(scope, ss)| {
                ss.slots.iter().map(move |s| TopKey {
                    scope: scope.clone(),
                    key: s.key.clone(),
                    count: s.count,
                    error: s.error,
                })
            })
            .collect();
        top_keys.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        Stats {
            by_outcome,
            top_keys,
        }
    }
}

/// A key that was intercepted often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopKey {
    /// The scope (namespace and scene).
    pub scope: String,
    /// The rendered key.
    pub key: String,
    /// How often it was intercepted (may overestimate by `error`).
    pub count: u64,
    /// The Space-Saving overestimate bound.
    pub error: u64,
}

/// A snapshot of the monitoring figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Calls per outcome label (only labels seen).
    pub by_outcome: BTreeMap<&'static str, u64>,
    /// Most-intercepted keys, most first.
    pub top_keys: Vec<TopKey>,
}

impl Stats {
    /// Calls with a given outcome.
    pub fn count(&self, outcome: &str) -> u64 {
        self.by_outcome.get(outcome).copied().unwrap_or(0)
    }

    /// All calls counted.
    pub fn calls(&self) -> u64 {
        self.by_outcome.values().sum()
    }

    /// (replayed + waited + backstop + duplicate_message) / calls.
    pub fn interception_rate(&self) -> f64 {
        let calls = self.calls();
        if calls == 0 {
            return 0.0;
        }
        INTERCEPTED.iter().map(|o| self.count(o)).sum::<u64>() as f64 / calls as f64
    }

    /// Duplicates caught only by the database constraint: each one is a duplicate
    /// the fast store missed (lost key, outage, expiry).
    pub fn backstop_hits(&self) -> u64 {
        self.count("backstop")
    }
}

/// The `idem_store_seconds{store,op}` keys of one store, built once: a
/// `metrics::Key` built per operation (what `histogram!` does) allocates its label
/// vector every time, recorder or not. Registration still happens per operation,
/// exactly as the macro does it, so a recorder installed later sees everything.
#[derive(Debug)]
pub(crate) struct StoreOpKeys {
    store: &'static str,
    seconds: Vec<(&'static str, metrics::Key)>,
}

static METADATA: metrics::Metadata<'static> =
    metrics::Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()));

impl StoreOpKeys {
    pub(crate) fn new(store: &'static str) -> Self {
        let seconds = ["claim", "complete", "release", "renew"]
            .into_iter()
            .map(|op| {
                let labels = vec![
                    metrics::Label::new("store", store),
                    metrics::Label::new("op", op),
                ];
                (op, metrics::Key::from_parts("idem_store_seconds", labels))
            })
            .collect();
        StoreOpKeys { store, seconds }
    }

    /// Times one store operation into `idem_store_seconds{store,op}`.
    pub(crate) fn record(&self, op: &'static str, secs: f64, ok: bool) {
        match self.seconds.iter().find(|(o, _)| *o == op) {
            Some((_, key)) => {
                metrics::with_recorder(|r| r.register_histogram(key, &METADATA).record(secs));
            }
            None => metrics::histogram!("idem_store_seconds", "store" => self.store, "op" => op)
                .record(secs),
        }
        if !ok {
            metrics::counter!("idem_store_errors_total", "store" => self.store, "op" => op)
                .increment(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_keys_keep_heavy_hitters() {
        let r = Recorder::default();
        for i in 0..1000 {
            r.record("idempotent", "s", &format!("k{i}"), "replayed");
            r.record("idempotent", "s", "hot", "replayed");
        }
        let s = r.snapshot();
        assert_eq!(s.top_keys[0].key, "hot");
        assert!(s.top_keys.len() <= TOP_CAPACITY);
        assert_eq!(s.count("replayed"), 2000);
        assert!((s.interception_rate() - 1.0).abs() < 1e-9);
    }

    /// The Space-Saving guarantees on a skewed stream: every key seen more than
    /// `n / capacity` times is listed, and each listed count brackets the truth:
    /// `count - error <= true <= count`.
    #[test]
    fn space_saving_bounds_hold() {
        let mut ss = SpaceSaving::default();
        let mut truth: HashMap<String, u64> = HashMap::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let n = 20_000u64;
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // A quarter of the hits go to 8 hot keys, the rest to 5000 cold ones.
            let k = if x.is_multiple_of(4) {
                format!("hot{}", (x >> 8) % 8)
            } else {
                format!("cold{}", (x >> 8) % 5_000)
            };
            ss.hit(&k);
            *truth.entry(k).or_default() += 1;
        }
        assert_eq!(ss.slots.len(), TOP_CAPACITY);
        assert_eq!(ss.index.len(), TOP_CAPACITY);
        assert_eq!(ss.slots.iter().map(|s| s.count).sum::<u64>(), n);
        for s in &ss.slots {
            let t = truth[&s.key];
            assert!(s.count - s.error <= t && t <= s.count, "{s:?} true {t}");
            assert_eq!(
                ss.index[&s.key],
                ss.slots.iter().position(|x| x.key == s.key).unwrap()
            );
        }
        for (k, t) in &truth {
            if *t > n / TOP_CAPACITY as u64 {
                assert!(ss.index.contains_key(k), "heavy key {k} ({t}) missing");
            }
        }
        for h in 0..8 {
            assert!(ss.index.contains_key(&format!("hot{h}")));
        }
    }

    /// The prebuilt keys register exactly what `histogram!` would, per operation
    /// (so a recorder installed later still sees them).
    #[derive(Default)]
    struct Seen(Mutex<Vec<String>>);
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
        fn register_counter(
            &self,
            k: &metrics::Key,
            _: &metrics::Metadata<'_>,
        ) -> metrics::Counter {
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

    /// `idem_calls_total` keys are cached per (technique, scope, outcome); a recorder
    /// that appears after the first calls (here a thread-local one) still sees every
    /// call with its labels, and scopes past the cache's capacity are still counted.
    #[test]
    fn call_keys_are_cached_and_seen_by_later_recorders() {
        let r = Recorder::default();
        r.record("idempotent", "pay", "k1", "executed");
        r.record("idempotent", "pay", "k1", "replayed");
        let seen = Seen::default();
        metrics::with_local_recorder(&seen, || {
            r.record("idempotent", "pay", "k1", "replayed");
            r.record("idempotent", "pay", "k2", "executed");
            r.record("lock", "pay", "k2", "executed");
            r.record("idempotent", "ship", "k3", "replayed");
        });
        let seen = seen.0.into_inner().unwrap();
        assert_eq!(seen.len(), 4, "{seen:?}");
        for (i, (t, s, o)) in [
            ("idempotent", "pay", "replayed"),
            ("idempotent", "pay", "executed"),
            ("lock", "pay", "executed"),
            ("idempotent", "ship", "replayed"),
        ]
        .into_iter()
        .enumerate()
        {
            assert!(
                seen[i].contains("idem_calls_total")
                    && seen[i].contains(&format!("technique = {t}"))
                    && seen[i].contains(&format!("scope = {s}"))
                    && seen[i].contains(&format!("outcome = {o}")),
                "{i}: {seen:?}"
            );
        }
        assert_eq!(r.call_keys.read().unwrap().len, 4, "one key per label set");
        for i in 0..CALL_KEYS_CAPACITY + 10 {
            r.record("idempotent", &format!("s{i}"), "k", "executed");
        }
        assert_eq!(
            r.call_keys.read().unwrap().len,
            CALL_KEYS_CAPACITY,
            "bounded"
        );
        let seen = Seen::default();
        metrics::with_local_recorder(&seen, || {
            r.record("idempotent", "s0", "k", "executed");
            r.record(
                "idempotent",
                &format!("s{}", CALL_KEYS_CAPACITY + 5),
                "k",
                "executed",
            );
        });
        let seen = seen.0.into_inner().unwrap();
        assert!(seen[0].contains("scope = s0"), "{seen:?}");
        assert!(
            seen[1].contains(&format!("scope = s{}", CALL_KEYS_CAPACITY + 5)),
            "past the capacity: {seen:?}"
        );
        assert_eq!(
            r.snapshot().count("executed"),
            CALL_KEYS_CAPACITY as u64 + 15
        );
    }

    #[test]
    fn store_op_keys_register_per_operation() {
        let keys = StoreOpKeys::new("redis");
        let seen = Seen::default();
        metrics::with_local_recorder(&seen, || {
            keys.record("claim", 0.001, true);
            keys.record("complete", 0.001, false);
            keys.record("inspect", 0.001, true);
        });
        let seen = seen.0.into_inner().unwrap();
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert!(
            seen[0].contains("idem_store_seconds")
                && seen[0].contains("op = claim")
                && seen[0].contains("store = redis"),
            "{seen:?}"
        );
        assert!(seen[1].contains("op = complete"), "{seen:?}");
        assert!(
            seen[2].contains("idem_store_errors_total") && seen[2].contains("op = complete"),
            "{seen:?}"
        );
        assert!(
            seen[3].contains("idem_store_seconds") && seen[3].contains("op = inspect"),
            "{seen:?}"
        );
    }
}
