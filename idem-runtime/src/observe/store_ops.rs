//! Store operation timing: `idem_store_seconds{store,op}` and
//! `idem_store_errors_total{store,op}`, recorded by the op wrapper around every
//! store call (stores themselves know no metrics); and the backpressure of a
//! store's send queue under a burst: `idem_store_queue_seconds{store,op}`, the
//! wait of each operation that found no free turn, and
//! `idem_store_overloaded_total{store,op}`, operations that got none within
//! their caller's budget (`Error::Overloaded`). And
//! `idem_store_unreplicated_total{store,op="complete"}`: results a store with
//! replicated durability kept although too few replicas acknowledged them.

use super::METADATA;
use super::labels::Op;

/// The metric keys of one store, built once: a `metrics::Key` built per operation
/// (what `histogram!` and `counter!` do) allocates its label vector every time,
/// recorder or not. Registration still happens per operation, exactly as the
/// macros do it, so a recorder installed later sees everything.
#[derive(Debug)]
pub(crate) struct StoreOpKeys {
    /// `idem_store_seconds` keys, indexed by [`Op::index`].
    seconds: Vec<metrics::Key>,
    /// `idem_store_errors_total` keys, indexed by [`Op::index`].
    errors: Vec<metrics::Key>,
    /// `idem_store_queue_seconds` keys, indexed by [`Op::index`].
    queue: Vec<metrics::Key>,
    /// `idem_store_overloaded_total` keys, indexed by [`Op::index`].
    overloaded: Vec<metrics::Key>,
    /// `idem_store_unreplicated_total{op="complete"}`.
    unreplicated: metrics::Key,
}

fn key(name: &'static str, store: &'static str, op: Op) -> metrics::Key {
    let labels = vec![
        metrics::Label::new("store", store),
        metrics::Label::new("op", op.as_str()),
    ];
    metrics::Key::from_parts(name, labels)
}

impl StoreOpKeys {
    pub(crate) fn new(store: &'static str) -> Self {
        let keys = |name| Op::ALL.iter().map(|&op| key(name, store, op)).collect();
        StoreOpKeys {
            seconds: keys("idem_store_seconds"),
            errors: keys("idem_store_errors_total"),
            queue: keys("idem_store_queue_seconds"),
            overloaded: keys("idem_store_overloaded_total"),
            unreplicated: key("idem_store_unreplicated_total", store, Op::Complete),
        }
    }

    /// Times one store operation; a failed one also counts as an error.
    pub(crate) fn record(&self, op: Op, secs: f64, ok: bool) {
        let i = op.index();
        metrics::with_recorder(|r| {
            r.register_histogram(&self.seconds[i], &METADATA)
                .record(secs);
            if !ok {
                r.register_counter(&self.errors[i], &METADATA).increment(1);
            }
        });
    }

    /// An operation waited `secs` for a turn in the store's send queue.
    pub(crate) fn queued(&self, op: Op, secs: f64) {
        metrics::with_recorder(|r| {
            r.register_histogram(&self.queue[op.index()], &METADATA)
                .record(secs);
        });
    }

    /// `n` completes applied but were acknowledged by fewer replicas than the
    /// store's durability asks for.
    pub(crate) fn unreplicated(&self, n: u64) {
        metrics::with_recorder(|r| {
            r.register_counter(&self.unreplicated, &METADATA)
                .increment(n);
        });
    }

    /// An operation got no turn within its caller's budget.
    pub(crate) fn overloaded(&self, op: Op) {
        metrics::with_recorder(|r| {
            r.register_counter(&self.overloaded[op.index()], &METADATA)
                .increment(1);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::testing::Seen;

    #[test]
    fn store_op_keys_register_per_operation() {
        let keys = StoreOpKeys::new("redis");
        let seen = Seen::default();
        metrics::with_local_recorder(&seen, || {
            keys.record(Op::Claim, 0.001, true);
            keys.record(Op::Complete, 0.001, false);
            keys.record(Op::Inspect, 0.001, true);
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
            seen[2].contains("idem_store_errors_total")
                && seen[2].contains("op = complete")
                && seen[2].contains("store = redis"),
            "{seen:?}"
        );
        assert!(
            seen[3].contains("idem_store_seconds") && seen[3].contains("op = inspect"),
            "{seen:?}"
        );
    }
}
