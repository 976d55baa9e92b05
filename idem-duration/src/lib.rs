//! Durations as text: `500ms`, `30s`, `5m`, `24h`, `7d`, a sum such as `1h30m`,
//! or anything in humantime's grammar (`1h 30m`, `2 days`, `90 sec`, `1week`).
//!
//! The one parser for both places an [idem](https://docs.rs/idem) duration is
//! written: the macros' string literals (`#[idempotent(ttl = "24h")]`, parsed
//! at compile time by `idem-macros`, which cannot call the runtime while it
//! expands) and the configuration files `idem::settings` deserializes. Plain
//! `std`, no dependencies.
//!
//! ```
//! use std::time::Duration;
//!
//! assert_eq!(idem_duration::parse("1h 30m"), Ok(Duration::from_secs(5_400)));
//! assert!(idem_duration::parse("0s").unwrap_err().contains("greater than zero"));
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod hold;

pub use hold::{HoldTooShort, check_hold};

use std::time::Duration;

/// The longest duration any idem setting accepts (ttl, lease, wait, `max_hold`,
/// the operation timeout, the breaker cooldown): 3,650 days. Every store can
/// represent `now + MAX_DURATION` (MySQL `DATETIME` ends in year 9999,
/// millisecond and microsecond fields fit in `i64`), and so can `Instant` on
/// every platform, so nothing downstream overflows.
pub const MAX_DURATION: Duration = Duration::from_secs(3650 * 24 * 3600);

const UNITS: &str =
    "`ms`, `s`, `m`, `h` or `d` (or humantime's `sec`, `min`, `hours`, `days`, `weeks`, …)";

/// Nanoseconds per unit, with humantime's names (a month is 30.44 days and a
/// year 365.25 days, as humantime counts them).
fn unit_nanos(unit: &str) -> Option<u128> {
    const S: u128 = 1_000_000_000;
    Some(match unit {
        "nanos" | "nsec" | "ns" => 1,
        "usec" | "us" => 1_000,
        "millis" | "msec" | "ms" => 1_000_000,
        "seconds" | "second" | "secs" | "sec" | "s" => S,
        "minutes" | "minute" | "mins" | "min" | "m" => 60 * S,
        "hours" | "hour" | "hrs" | "hr" | "h" => 3_600 * S,
        "days" | "day" | "d" => 86_400 * S,
        "weeks" | "week" | "w" => 7 * 86_400 * S,
        "months" | "month" | "M" => 2_630_016 * S,
        "years" | "year" | "y" => 31_557_600 * S,
        _ => return None,
    })
}

/// Parses a duration. Zero, a fraction of a millisecond, more than about 31
/// years or an unknown unit is an error: a complete, lowercase message naming
/// the text, ready for a compile error at the value's span or a configuration
/// error.
pub fn parse(text: &str) -> Result<Duration, String> {
    let malformed = || {
        format!(
            "invalid duration `{text}`: expected numbers each followed by {UNITS}, e.g. `30s` or `1h 30m`"
        )
    };
    let too_large = || format!("duration `{text}` is too large");
    let mut total: u128 = 0;
    let mut rest = text.trim_start();
    if rest.is_empty() {
        return Err(malformed());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(malformed());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| too_large())?;
        rest = rest[digits..].trim_start();
        let unit_len = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let per = unit_nanos(&rest[..unit_len]).ok_or_else(malformed)?;
        rest = rest[unit_len..].trim_start();
        total = u128::from(n)
            .checked_mul(per)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(too_large)?;
    }
    if total == 0 {
        return Err(format!("duration `{text}` must be greater than zero"));
    }
    if !total.is_multiple_of(1_000_000) {
        return Err(format!(
            "duration `{text}` is not a whole number of milliseconds"
        ));
    }
    let ms = u64::try_from(total / 1_000_000).map_err(|_| too_large())?;
    // Past ~31 years a lease or ttl is a mistake, and larger values overflow
    // the stores' microsecond arithmetic.
    if ms > 1_000 * 31_557_600 * 31 {
        return Err(too_large());
    }
    Ok(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5_400)));
    }

    #[test]
    fn humantime_grammar() {
        assert_eq!(parse("1h 30m"), Ok(Duration::from_secs(5_400)));
        assert_eq!(parse("24 hours"), Ok(Duration::from_secs(86_400)));
        assert_eq!(
            parse("2days 3hrs"),
            Ok(Duration::from_secs(2 * 86_400 + 3 * 3_600))
        );
        assert_eq!(parse("90 sec"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("1week"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse("1500000us"), Ok(Duration::from_millis(1_500)));
        assert_eq!(parse("1month"), Ok(Duration::from_secs(2_630_016)));
        assert_eq!(parse(" 5 min "), Ok(Duration::from_secs(300)));
    }

    #[test]
    fn zero_and_malformed_are_errors() {
        for bad in [
            "",
            "0s",
            "0ms0s",
            "s",
            "10",
            "1.5h",
            "10x",
            "-1s",
            "1h30",
            "h1",
            "3 parsecs",
            "1h,30m",
            "500us",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(parse("0s").unwrap_err().contains("greater than zero"));
        assert!(
            parse("99999999999999999999d")
                .unwrap_err()
                .contains("too large")
        );
        assert!(parse("999999999999999d").unwrap_err().contains("too large"));
        assert!(
            parse("500us")
                .unwrap_err()
                .contains("whole number of milliseconds")
        );
    }
}
