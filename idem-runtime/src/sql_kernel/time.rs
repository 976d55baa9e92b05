//! Durations as the drivers bind them. Every SQL statement of idem passes
//! leases and ttls as integer microseconds and lets the database clock add them
//! (so application hosts with skewed clocks agree); one conversion keeps a huge
//! duration from wrapping into a negative one.

use std::time::Duration;

/// Whole microseconds of `d` as an `i64`, capped at
/// [`MAX_DURATION`](crate::policy::MAX_DURATION) (3,650 days): every database
/// can add that to its clock (MySQL `DATETIME` ends in year 9999, a PostgreSQL
/// interval of `i64::MAX / 2` µs overflows), so a store called directly with
/// `Duration::MAX` keeps the record for ten years instead of failing the
/// statement and counting it against the breaker.
///
/// ```
/// use std::time::Duration;
/// use idem::db::micros;
/// use idem::policy::MAX_DURATION;
/// assert_eq!(micros(Duration::from_millis(1500)), 1_500_000);
/// assert_eq!(micros(Duration::MAX), MAX_DURATION.as_micros() as i64);
/// ```
pub fn micros(d: Duration) -> i64 {
    let d = d.min(idem_duration::MAX_DURATION);
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX / 2)
}

/// Microseconds since the Unix epoch (0 before it), as a cheap source of jitter.
pub(crate) fn unix_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}
