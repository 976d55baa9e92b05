//! Jitter for retry pauses and remote waiters' polling: many callers that met
//! one busy key or one store blip at the same instant would otherwise retry in
//! lockstep and meet again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A per-handle sequence of pseudo-random numbers (splitmix64 over a counter).
///
/// Not `RandomState`: the seeded simulation replays a run from its seed and
/// compares the histories, so every source of variation in the execution layer
/// must be a function of what happened before. The sequence starts from the
/// process id: two runs in one process draw the same numbers, while processes
/// of one service (and callers within one: each draw advances it) do not
/// retry in step.
#[derive(Debug)]
pub(crate) struct Jitter(AtomicU64);

impl Default for Jitter {
    fn default() -> Self {
        Jitter(AtomicU64::new(
            u64::from(std::process::id()).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        ))
    }
}

impl Jitter {
    /// Starts the sequence again from `seed`: the simulation's processes are
    /// tasks of one test process, so their pid is no seed (a seed must replay
    /// the same run in another test process, as CI's does).
    pub(crate) fn reseed(&self, seed: u64) {
        self.0.store(seed, Ordering::Relaxed);
    }

    /// A duration between half of `d` and `d` ("equal jitter"): the pause never
    /// grows, and never shrinks below half, so backoff still backs off.
    pub(crate) fn apply(&self, d: Duration) -> Duration {
        let mut z = self
            .0
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let half = d / 2;
        let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        half + Duration::from_nanos(if nanos == 0 { 0 } else { z % (nanos + 1) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn between_half_and_whole_varied_and_reproducible() {
        let d = Duration::from_millis(40);
        let j = Jitter::default();
        let got: Vec<Duration> = (0..64).map(|_| j.apply(d)).collect();
        assert!(got.iter().all(|x| *x >= d / 2 && *x <= d), "{got:?}");
        assert!(got.iter().any(|x| *x != got[0]), "{got:?}");
        let again = Jitter::default();
        let replay: Vec<Duration> = (0..64).map(|_| again.apply(d)).collect();
        assert_eq!(got, replay, "a fresh handle draws the same sequence");
        assert_eq!(j.apply(Duration::ZERO), Duration::ZERO);
        let (a, b) = (Jitter::default(), Jitter::default());
        a.reseed(7);
        b.reseed(7);
        assert_eq!(a.apply(d), b.apply(d), "one seed, one sequence");
        b.reseed(8);
        let from_7: Vec<Duration> = (0..8).map(|_| a.apply(d)).collect();
        let from_8: Vec<Duration> = (0..8).map(|_| b.apply(d)).collect();
        assert_ne!(from_7, from_8, "another seed, another sequence");
    }
}
