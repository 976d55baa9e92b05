//! The per-handle call counters behind [`Stats`], and the emission of
//! `idem_calls_total{technique,scope,outcome}` and
//! `idem_backstop_hits_total{technique,scope,path}` through the `metrics` facade.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use super::METADATA;
use super::labels::{CallOutcome, Technique};
use super::stats::{Stats, TopKey};
use super::topk::SpaceSaving;
use super::verdict::Verdict;

/// At most this many `idem_calls_total` keys are cached per handle; calls past it
/// (an unbounded set of scopes) build their key each time, as the macro would.
const CALL_KEYS_CAPACITY: usize = 1024;

/// In-process counters behind [`Stats`].
#[derive(Debug)]
pub(crate) struct Recorder {
    /// Indexed by [`CallOutcome::index`].
    by_outcome: [AtomicU64; CallOutcome::ALL.len()],
    /// Per scope: the cached `idem_calls_total` keys and the top-K. One map, so a
    /// replay hashes its scope once and takes one read lock (it used to look the
    /// scope up twice, once under a mutex every thread shared for the top-K).
    scopes: RwLock<Scopes>,
    /// Degraded calls whose body hit the constraint (also counted as `degraded`).
    degraded_hits: AtomicU64,
    /// The handle opted in to raw keys in its spans (`IdemBuilder::log_raw_keys`).
    raw_keys: AtomicBool,
}

#[derive(Debug, Default)]
struct Scopes {
    /// Scope names are the program's (`namespace:scene`): a fast hasher is
    /// enough, and SipHash was most of a look-up.
    by_name: HashMap<Box<str>, Scope, foldhash::fast::RandomState>,
    /// `idem_calls_total` keys cached over all scopes (at most [`CALL_KEYS_CAPACITY`]).
    keys: usize,
}

/// One scope's figures.
#[derive(Debug, Default)]
struct Scope {
    /// `idem_calls_total` keys by (technique, outcome). Keys, not registered
    /// handles: a key means the same to every recorder, so a global recorder
    /// installed after the first calls (or a thread-local one, as in
    /// `metrics::with_local_recorder`) still sees every call. The `counter!` macro
    /// built the key per call: an owned `scope` label and a label vector.
    keys: Vec<(Technique, CallOutcome, metrics::Key)>,
    /// The scope's most-repeated keys, under its own lock.
    top: Mutex<SpaceSaving>,
}

impl Scope {
    fn key(&self, technique: Technique, outcome: CallOutcome) -> Option<&metrics::Key> {
        self.keys
            .iter()
            .find(|(t, o, _)| *t == technique && *o == outcome)
            .map(|(_, _, k)| k)
    }

    fn hit(&self, key: &str) {
        self.top.lock().unwrap_or_else(|p| p.into_inner()).hit(key);
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            by_outcome: std::array::from_fn(|_| AtomicU64::new(0)),
            scopes: RwLock::new(Scopes::default()),
            degraded_hits: AtomicU64::new(0),
            raw_keys: AtomicBool::new(false),
        }
    }
}

impl Recorder {
    /// Spans carry raw keys instead of their hashes.
    pub(crate) fn set_raw_keys(&self, on: bool) {
        self.raw_keys.store(on, Ordering::Relaxed);
    }

    pub(crate) fn raw_keys(&self) -> bool {
        self.raw_keys.load(Ordering::Relaxed)
    }
}

fn call_key(technique: Technique, scope: &str, outcome: CallOutcome) -> metrics::Key {
    let labels = vec![
        metrics::Label::new("technique", technique.as_str()),
        metrics::Label::new("scope", scope.to_owned()),
        metrics::Label::new("outcome", outcome.as_str()),
    ];
    metrics::Key::from_parts("idem_calls_total", labels)
}

/// `idem_backstop_hits_total`: only on a constraint hit, a rare path, so the
/// key is built per hit.
fn count_backstop_hit(technique: Technique, scope: &str, path: &'static str) {
    let labels = vec![
        metrics::Label::new("technique", technique.as_str()),
        metrics::Label::new("scope", scope.to_owned()),
        metrics::Label::new("path", path),
    ];
    increment(&metrics::Key::from_parts(
        "idem_backstop_hits_total",
        labels,
    ));
}

fn increment(key: &metrics::Key) {
    metrics::with_recorder(|r| r.register_counter(key, &METADATA).increment(1));
}

/// Calls whose key goes into the top-K: duplicates, intercepted or refused
/// (a state transition finding its row already moved is a repeated request),
/// degraded calls the constraint stopped included.
fn is_repeat(verdict: Verdict) -> bool {
    let outcome = verdict.outcome;
    verdict.backstop_hit
        || outcome.is_intercepted()
        || matches!(
            outcome,
            CallOutcome::InProgress | CallOutcome::Mismatch | CallOutcome::AlreadyApplied
        )
}

impl Recorder {
    /// Counts one call: the in-process counter, `idem_calls_total`, a backstop
    /// hit when the constraint caught a duplicate, and the key in its scope's
    /// top-K when the call was a duplicate.
    pub(crate) fn record(
        &self,
        technique: Technique,
        scope: &str,
        key: &str,
        verdict: impl Into<Verdict>,
    ) {
        let verdict = verdict.into();
        let outcome = verdict.outcome;
        self.by_outcome[outcome.index()].fetch_add(1, Ordering::Relaxed);
        if let Some(path) = verdict.backstop_path() {
            if outcome == CallOutcome::Degraded {
                self.degraded_hits.fetch_add(1, Ordering::Relaxed);
            }
            count_backstop_hit(technique, scope, path);
        }
        let repeat = is_repeat(verdict);
        {
            let scopes = self.scopes.read().unwrap_or_else(|p| p.into_inner());
            if let Some(s) = scopes.by_name.get(scope)
                && let Some(k) = s.key(technique, outcome)
            {
                increment(k);
                if repeat {
                    s.hit(key);
                }
                return;
            }
        }
        self.record_new(technique, scope, key, outcome, repeat);
    }

    /// [`record`](Self::record) for a (technique, scope, outcome) without a
    /// cached key: builds it, caches it while under the capacity.
    #[cold]
    fn record_new(
        &self,
        technique: Technique,
        scope: &str,
        key: &str,
        outcome: CallOutcome,
        repeat: bool,
    ) {
        let call = call_key(technique, scope, outcome);
        increment(&call);
        let mut scopes = self.scopes.write().unwrap_or_else(|p| p.into_inner());
        let Scopes { by_name, keys } = &mut *scopes;
        let s = match by_name.get_mut(scope) {
            Some(s) => s,
            None => by_name.entry(scope.into()).or_default(),
        };
        if *keys < CALL_KEYS_CAPACITY && s.key(technique, outcome).is_none() {
            s.keys.push((technique, outcome, call));
            *keys += 1;
        }
        if repeat {
            s.hit(key);
        }
    }

    pub(crate) fn snapshot(&self) -> Stats {
        let by_outcome: BTreeMap<&'static str, u64> = CallOutcome::ALL
            .iter()
            .zip(&self.by_outcome)
            .map(|(o, c)| (o.as_str(), c.load(Ordering::Relaxed)))
            .filter(|(_, c)| *c > 0)
            .collect();
        let scopes = self.scopes.read().unwrap_or_else(|p| p.into_inner());
        let mut top_keys: Vec<TopKey> = Vec::new();
        for (scope, s) in &scopes.by_name {
            let top = s.top.lock().unwrap_or_else(|p| p.into_inner());
            let floor = top.floor();
            top_keys.extend(top.entries().map(|(key, count, error)| TopKey {
                scope: scope.to_string(),
                key: key.to_owned(),
                count,
                error,
                floor,
            }));
        }
        top_keys.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        Stats {
            by_outcome,
            degraded_backstop_hits: self.degraded_hits.load(Ordering::Relaxed),
            top_keys,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::testing::Seen;
    use crate::observe::topk::TOP_CAPACITY;

    const IDEM: Technique = Technique::Idempotent;

    #[test]
    fn top_keys_keep_heavy_hitters() {
        let r = Recorder::default();
        for i in 0..1000 {
            r.record(IDEM, "s", &format!("k{i}"), CallOutcome::Replayed);
            r.record(IDEM, "s", "hot", CallOutcome::Replayed);
        }
        let s = r.snapshot();
        assert_eq!(s.top_keys[0].key, "hot");
        assert!(s.top_keys.len() <= TOP_CAPACITY);
        assert_eq!(s.count("replayed"), 2000);
        assert!((s.interception_rate() - 1.0).abs() < 1e-9);
    }

    /// Every outcome is counted under its own label, and only duplicates
    /// (intercepted, in progress, mismatch) reach the top-K.
    #[test]
    fn each_outcome_counts_under_its_label() {
        let r = Recorder::default();
        for (n, o) in CallOutcome::ALL.iter().enumerate() {
            for _ in 0..=n {
                r.record(IDEM, "s", o.as_str(), *o);
            }
        }
        let s = r.snapshot();
        for (n, o) in CallOutcome::ALL.iter().enumerate() {
            assert_eq!(s.count(o.as_str()), n as u64 + 1, "{o}");
        }
        let mut top: Vec<&str> = s.top_keys.iter().map(|t| t.key.as_str()).collect();
        top.sort();
        assert_eq!(
            top,
            [
                "already_applied",
                "backstop",
                "duplicate_message",
                "in_progress",
                "mismatch",
                "replayed",
                "waited"
            ]
        );
    }

    /// `idem_calls_total` keys are cached per (technique, scope, outcome); a recorder
    /// that appears after the first calls (here a thread-local one) still sees every
    /// call with its labels, and scopes past the cache's capacity are still counted.
    #[test]
    fn call_keys_are_cached_and_seen_by_later_recorders() {
        use CallOutcome::{Executed, Replayed};
        let r = Recorder::default();
        r.record(IDEM, "pay", "k1", Executed);
        r.record(IDEM, "pay", "k1", Replayed);
        let seen = Seen::default();
        metrics::with_local_recorder(&seen, || {
            r.record(IDEM, "pay", "k1", Replayed);
            r.record(IDEM, "pay", "k2", Executed);
            r.record(Technique::Lock, "pay", "k2", Executed);
            r.record(IDEM, "ship", "k3", Replayed);
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
        assert_eq!(r.scopes.read().unwrap().keys, 4, "one key per label set");
        for i in 0..CALL_KEYS_CAPACITY + 10 {
            r.record(IDEM, &format!("s{i}"), "k", Executed);
        }
        assert_eq!(r.scopes.read().unwrap().keys, CALL_KEYS_CAPACITY, "bounded");
        let seen = Seen::default();
        metrics::with_local_recorder(&seen, || {
            r.record(IDEM, "s0", "k", Executed);
            r.record(IDEM, &format!("s{}", CALL_KEYS_CAPACITY + 5), "k", Executed);
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

    /// A degraded call the constraint stopped is one `degraded` call and one
    /// backstop hit (path `degraded`); a guarded hit is `backstop` (path
    /// `guarded`). Both count as intercepted and reach the top-K.
    #[test]
    fn degraded_hits_are_degraded_calls_and_backstop_hits() {
        let r = Recorder::default();
        let seen = Seen::default();
        metrics::with_local_recorder(&seen, || {
            r.record(IDEM, "s", "a", Verdict::degraded(false));
            r.record(IDEM, "s", "b", Verdict::degraded(true));
            r.record(IDEM, "s", "c", CallOutcome::Backstop);
            r.record(IDEM, "s", "d", CallOutcome::Executed);
        });
        let s = r.snapshot();
        assert_eq!(s.count("degraded"), 2);
        assert_eq!(s.count("backstop"), 1);
        assert_eq!(s.degraded_backstop_hits, 1);
        assert_eq!(s.backstop_hits(), 2);
        assert!((s.interception_rate() - 0.5).abs() < 1e-9);
        let mut top: Vec<&str> = s.top_keys.iter().map(|t| t.key.as_str()).collect();
        top.sort();
        assert_eq!(top, ["b", "c"]);
        let seen = seen.0.into_inner().unwrap();
        let hits: Vec<&String> = seen
            .iter()
            .filter(|k| k.contains("idem_backstop_hits_total"))
            .collect();
        assert_eq!(hits.len(), 2, "{seen:?}");
        assert!(hits[0].contains("path = degraded"), "{hits:?}");
        assert!(hits[1].contains("path = guarded"), "{hits:?}");
    }
}
