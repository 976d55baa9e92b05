//! Durations as the drivers bind them. Every SQL statement of idem passes
//! leases and ttls as integer microseconds and lets the database clock add them
//! (so application hosts with skewed clocks agree); one conversion keeps a huge
//! duration from wrapping into a negative one.

use std::time::Duration;

/// Whole microseconds of `d` as an `i64`; a duration beyond `i64` microseconds
/// (about 292,000 years) becomes `i64::MAX / 2`, never a negative number.
///
/// ```
/// use std::time::Duration;
/// use idem_runtime::db::micros;
/// assert_eq!(micros(Duration::from_millis(1500)), 1_500_000);
/// assert_eq!(micros(Duration::MAX), i64::MAX / 2);
/// ```
pub fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX / 2)
}

/// Microseconds since the Unix epoch (0 before it), as a cheap source of jitter.
pub(crate) fn unix_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}
