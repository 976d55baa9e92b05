//! Durations written as strings in the attribute: `500ms`, `30s`, `5m`, `24h`,
//! `7d`, or a sum such as `1h30m`. Parsed at compile time; zero is an error.

use std::time::Duration;

use syn::LitStr;

use crate::common::errors::Errors;

const UNITS: &str = "`ms`, `s`, `m`, `h` or `d`";

/// Parses a duration; the error is a complete message for the value's span.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    let malformed = || {
        format!(
            "invalid duration `{text}`: expected a number followed by {UNITS}, e.g. `30s` or `1h30m`"
        )
    };
    if text.is_empty() {
        return Err(malformed());
    }
    let mut total: u64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(malformed());
        }
        let n: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("duration `{text}` is too large"))?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let ms_per_unit: u64 = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return Err(malformed()),
        };
        rest = &rest[unit_len..];
        total = n
            .checked_mul(ms_per_unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| format!("duration `{text}` is too large"))?;
    }
    if total == 0 {
        return Err(format!("duration `{text}` must be greater than zero"));
    }
    Ok(Duration::from_millis(total))
}

/// A duration option as written: the literal (for spans) and its parse. The
/// options are read first and values judged later, so a malformed duration is
/// reported by [`DurationLit::get`] beside the other value errors, in order.
#[derive(Debug)]
pub(crate) struct DurationLit {
    pub(crate) lit: LitStr,
    parsed: Result<Duration, String>,
}

impl DurationLit {
    pub(crate) fn new(lit: LitStr) -> Self {
        let parsed = parse(&lit.value());
        DurationLit { lit, parsed }
    }

    /// The duration, or `None` with the problem recorded at the literal.
    pub(crate) fn get(&self, errors: &mut Errors) -> Option<Duration> {
        self.parsed
            .as_ref()
            .map_err(|m| errors.at(self.lit.span(), m))
            .ok()
            .copied()
    }
}

/// Renders a duration the way users write it, for messages (`90s` → `1m30s`).
pub(crate) fn display(d: Duration) -> String {
    let mut ms = d.as_millis();
    let mut out = String::new();
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ] {
        if ms >= size {
            out.push_str(&format!("{}{unit}", ms / size));
            ms %= size;
        }
    }
    out
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
    fn zero_and_malformed_are_errors() {
        for bad in [
            "", "0s", "0ms0s", "s", "10", "10 s", "1.5h", "10x", "-1s", "1h30", "h1",
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
    }

    #[test]
    fn displays_like_input() {
        assert_eq!(display(Duration::from_secs(90)), "1m30s");
        assert_eq!(display(Duration::from_secs(86_400)), "1d");
        assert_eq!(display(Duration::from_millis(1_500)), "1s500ms");
    }
}
