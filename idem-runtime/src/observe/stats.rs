//! What [`Idem::stats`](crate::Idem::stats) returns: the monitoring figures
//! without a metrics backend (interception rate, backstop hits, top keys).

use std::collections::BTreeMap;

use super::labels::CallOutcome;

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
    /// The most any key of this scope missing from the list can have been
    /// intercepted (the summary's smallest count; 0 while it has free slots).
    pub floor: u64,
}

impl TopKey {
    /// How often the key was certainly intercepted: `count - error`, a lower
    /// bound on the truth (the truth lies in `guaranteed()..=count`).
    pub fn guaranteed(&self) -> u64 {
        self.count - self.error
    }

    /// True when the key was certainly intercepted more often than any key of
    /// its scope missing from the list (`guaranteed() > floor`): a key that
    /// really is among the most repeated, not summary noise. With no hot key
    /// no key passes once the summary is full, however large `count` looks.
    pub fn is_certain(&self) -> bool {
        self.guaranteed() > self.floor
    }
}

/// A snapshot of the monitoring figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Calls per outcome label (only labels seen).
    pub by_outcome: BTreeMap<&'static str, u64>,
    /// Degraded calls (counted under `degraded`) whose body hit the backstop
    /// constraint: backstop hits on the degraded path.
    pub degraded_backstop_hits: u64,
    /// Most-intercepted keys, most first.
    pub top_keys: Vec<TopKey>,
}

impl Stats {
    /// The top keys that are certainly repeated ([`TopKey::is_certain`]),
    /// most certain repeats first: what [`render_top_keys`](super::render_top_keys)
    /// exports.
    pub fn repeated_keys(&self) -> Vec<&TopKey> {
        let mut keys: Vec<&TopKey> = self.top_keys.iter().filter(|k| k.is_certain()).collect();
        keys.sort_by(|a, b| {
            (b.guaranteed().cmp(&a.guaranteed()))
                .then_with(|| a.scope.cmp(&b.scope))
                .then_with(|| a.key.cmp(&b.key))
        });
        keys
    }

    /// Calls with a given outcome label (`"replayed"`, see [`CallOutcome`]).
    pub fn count(&self, outcome: &str) -> u64 {
        self.by_outcome.get(outcome).copied().unwrap_or(0)
    }

    /// All calls counted.
    pub fn calls(&self) -> u64 {
        self.by_outcome.values().sum()
    }

    /// (replayed + waited + backstop hits + duplicate_message) / calls: a degraded
    /// call the constraint stopped was a duplicate intercepted too.
    pub fn interception_rate(&self) -> f64 {
        let calls = self.calls();
        if calls == 0 {
            return 0.0;
        }
        let intercepted: u64 = CallOutcome::ALL
            .iter()
            .filter(|o| o.is_intercepted())
            .map(|o| self.count(o.as_str()))
            .sum();
        (intercepted + self.degraded_backstop_hits) as f64 / calls as f64
    }

    /// Duplicates caught only by the database constraint: each one is a duplicate
    /// the fast store missed. Guarded calls whose record was lost (expiry,
    /// failover, `FLUSHALL`: `outcome="backstop"`) plus degraded calls whose body
    /// hit the constraint while the store was down ([`degraded_backstop_hits`],
    /// counted under `degraded`). Equals `sum(idem_backstop_hits_total)`.
    ///
    /// [`degraded_backstop_hits`]: Stats::degraded_backstop_hits
    pub fn backstop_hits(&self) -> u64 {
        self.count(CallOutcome::Backstop.as_str()) + self.degraded_backstop_hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_counts_only_intercepted_outcomes() {
        let mut s = Stats::default();
        assert_eq!(s.interception_rate(), 0.0, "no calls: no rate");
        for (o, n) in [
            ("executed", 4),
            ("replayed", 2),
            ("waited", 1),
            ("backstop", 1),
            ("duplicate_message", 1),
            ("in_progress", 1),
        ] {
            s.by_outcome.insert(o, n);
        }
        assert_eq!(s.calls(), 10);
        assert!((s.interception_rate() - 0.5).abs() < 1e-9);
        assert_eq!(s.backstop_hits(), 1);
        assert_eq!(s.count("mismatch"), 0);
    }
}
