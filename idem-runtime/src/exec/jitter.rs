//! Jitter for retry pauses and remote waiters' polling: many callers that met
//! one busy key or one store blip at the same instant would otherwise retry in
//! lockstep and meet again.

use std::hash::BuildHasher;
use std::time::Duration;

/// A random duration between half of `d` and `d` ("equal jitter"): the pause
/// never grows, and never shrinks below half, so backoff still backs off.
pub(crate) fn jitter(d: Duration) -> Duration {
    // Each `RandomState` has fresh keys: hashing anything with it is a cheap
    // random number, with no dependency and no shared state between threads.
    let r = std::collections::hash_map::RandomState::new().hash_one(0u8);
    let half = d / 2;
    let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
    half + Duration::from_nanos(if nanos == 0 { 0 } else { r % (nanos + 1) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn between_half_and_whole_and_not_constant() {
        let d = Duration::from_millis(40);
        let got: Vec<Duration> = (0..64).map(|_| jitter(d)).collect();
        assert!(got.iter().all(|j| *j >= d / 2 && *j <= d), "{got:?}");
        assert!(got.iter().any(|j| *j != got[0]), "{got:?}");
        assert_eq!(jitter(Duration::ZERO), Duration::ZERO);
    }
}
