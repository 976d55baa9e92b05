//! Durations written as strings in the attribute: `500ms`, `30s`, `5m`, `24h`,
//! `7d`, a sum such as `1h30m`, or anything in humantime's grammar (`1h 30m`,
//! `2 days`, `90 sec`, `1week`): the format `humantime::parse_duration` and most
//! configuration files accept, so a value can be copied from one to the other.
//! Parsed at compile time; zero, a fraction of a millisecond or an unknown unit
//! is an error. Any other expression (`ORDER_TTL`, `Duration::from_secs(60)`,
//! `cfg.ttl()`) is a [`DurationArg::Expr`]: typed `Duration` by rustc at the
//! user's span and checked by the runtime when the call runs.

use std::time::Duration;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, LitStr};

use crate::common::args::Opt;
use crate::common::errors::Errors;

/// The parser the runtime's configuration uses too: one grammar, one crate.
pub(crate) use idem_duration::parse;

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

/// A duration option as written: a string literal (parsed now) or an
/// expression of type `Duration` (evaluated per call, checked at run time).
#[derive(Debug)]
pub(crate) enum DurationArg {
    Lit(DurationLit),
    Expr(Expr),
}

impl DurationArg {
    /// The literal's duration (`None` for an expression, or a malformed
    /// literal, recorded).
    pub(crate) fn get(&self, errors: &mut Errors) -> Option<Duration> {
        match self {
            DurationArg::Lit(l) => l.get(errors),
            DurationArg::Expr(_) => None,
        }
    }

    /// The value's span, for messages comparing it with another option.
    pub(crate) fn span(&self) -> Span {
        match self {
            DurationArg::Lit(l) => l.lit.span(),
            DurationArg::Expr(e) => e.span(),
        }
    }
}

/// An option's value, if written.
pub(crate) fn written(opt: &Option<Opt<DurationArg>>) -> Option<&DurationArg> {
    opt.as_ref().map(|o| &o.value)
}

/// The duration options of one macro as codegen needs them: literals go into
/// the static spec, expressions become per-call hooks (`.ttl(expr)`).
#[derive(Debug, Default)]
pub(crate) struct Durations {
    /// `(option, value)` of every literal written.
    pub(crate) fixed: Vec<(&'static str, Duration)>,
    /// `(option, expression)` of every expression written.
    pub(crate) dynamic: Vec<(&'static str, Expr)>,
}

impl Durations {
    /// Sorts the options written: `(name, option, its literal value if valid)`.
    pub(crate) fn of(opts: &[(&'static str, Option<&DurationArg>, Option<Duration>)]) -> Self {
        let mut out = Durations::default();
        for (name, arg, value) in opts {
            match (arg, value) {
                (Some(DurationArg::Expr(e)), _) => out.dynamic.push((name, e.clone())),
                (Some(DurationArg::Lit(_)), Some(d)) => out.fixed.push((name, *d)),
                _ => {}
            }
        }
        out
    }

    /// Was every one of `names` written as a literal?
    pub(crate) fn all_fixed(&self, names: &[&str]) -> bool {
        names.iter().all(|n| self.fixed.iter().any(|(f, _)| f == n))
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
    fn displays_like_input() {
        assert_eq!(display(Duration::from_secs(90)), "1m30s");
        assert_eq!(display(Duration::from_secs(86_400)), "1d");
        assert_eq!(display(Duration::from_millis(1_500)), "1s500ms");
    }
}
