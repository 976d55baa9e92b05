//! The monitoring figures: interception rate, top conflicting keys, backstop hits.
//!
//! Every guarded call emits `idem_calls_total{technique,scope,outcome}` through the
//! `metrics` facade (export with any recorder, e.g. Prometheus) and is also counted
//! here, in process, so [`Idem::stats`](crate::Idem::stats) can answer without a
//! metrics backend. Top keys use the Space-Saving algorithm: bounded memory, and
//! any key repeated more than `calls / capacity` times is guaranteed to be listed.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

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

#[derive(Debug, Default)]
struct SpaceSaving {
    counts: HashMap<String, (u64, u64)>, // key -> (count, overestimate)
}

impl SpaceSaving {
    fn hit(&mut self, key: &str) {
        if let Some(c) = self.counts.get_mut(key) {
            c.0 += 1;
            return;
        }
        if self.counts.len() < TOP_CAPACITY {
            self.counts.insert(key.to_owned(), (1, 0));
            return;
        }
        // Replace the minimum: the newcomer inherits its count as possible error.
        if let Some((min_key, min)) = self
            .counts
            .iter()
            .min_by_key(|(_, c)| c.0)
            .map(|(k, c)| (k.clone(), c.0))
        {
            self.counts.remove(&min_key);
            self.counts.insert(key.to_owned(), (min + 1, min));
        }
    }
}

/// In-process counters behind [`Stats`].
#[derive(Debug)]
pub(crate) struct Recorder {
    by_outcome: Vec<AtomicU64>,
    top: Mutex<HashMap<String, SpaceSaving>>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            by_outcome: OUTCOMES.iter().map(|_| AtomicU64::new(0)).collect(),
            top: Mutex::new(HashMap::new()),
        }
    }
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
        metrics::counter!(
            "idem_calls_total",
            "technique" => technique,
            "scope" => scope.to_owned(),
            "outcome" => outcome
        )
        .increment(1);
        if INTERCEPTED.contains(&outcome) || outcome == "in_progress" || outcome == "mismatch" {
            let mut top = self.top.lock().unwrap_or_else(|p| p.into_inner());
            top.entry(scope.to_owned()).or_default().hit(key);
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
                ss.counts.iter().map(move |(k, c)| TopKey {
                    scope: scope.clone(),
                    key: k.clone(),
                    count: c.0,
                    error: c.1,
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

/// Times one store operation into `idem_store_seconds{store,op}`.
pub(crate) fn store_op(store: &'static str, op: &'static str, secs: f64, ok: bool) {
    metrics::histogram!("idem_store_seconds", "store" => store, "op" => op).record(secs);
    if !ok {
        metrics::counter!("idem_store_errors_total", "store" => store, "op" => op).increment(1);
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
}
