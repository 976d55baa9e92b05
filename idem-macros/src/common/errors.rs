//! Error collection for every macro: each problem in one attribute is reported
//! at once (serde's `Ctxt`), with its own span, in rustc's style; and the
//! did-you-mean helpers the messages share.

use proc_macro2::{Span, TokenStream};

/// The errors found so far.
#[derive(Default)]
pub(crate) struct Errors {
    errors: Vec<syn::Error>,
    /// Options an unknown option's "did you mean" named: `kye = ".."` stands
    /// for `key`, so a missing `key` is not reported a second time.
    suggested: Vec<&'static str>,
}

impl Errors {
    /// Records an error at `span`.
    pub(crate) fn at(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.errors.push(syn::Error::new(span, msg));
    }

    /// Records an error from a parser.
    pub(crate) fn push(&mut self, e: syn::Error) {
        self.errors.push(e);
    }

    /// Records the unknown option `name` at `span`, with the option it most
    /// likely meant among `options`.
    pub(crate) fn unknown_option(
        &mut self,
        span: Span,
        name: &str,
        attr: &str,
        options: &[&'static str],
    ) {
        if let Some(meant) = did_you_mean(name, options.iter().copied()) {
            self.suggested.push(meant);
        }
        self.at(span, unknown_option(name, attr, options));
    }

    /// Records that the required `option` is missing, unless a misspelt
    /// option already reported stands for it (one error per mistake).
    pub(crate) fn missing(
        &mut self,
        option: &'static str,
        span: Span,
        msg: impl std::fmt::Display,
    ) {
        if !self.suggested.contains(&option) {
            self.at(span, msg);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// One `compile_error!` per error.
    pub(crate) fn into_compile_errors(self) -> TokenStream {
        self.errors
            .into_iter()
            .map(|e| e.to_compile_error())
            .collect()
    }
}

/// The closest candidate to `name`, if it is close enough to be a plausible typo.
pub(crate) fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// `; did you mean `x`?` or nothing.
pub(crate) fn suggestion<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match did_you_mean(name, candidates) {
        Some(c) => format!("; did you mean `{c}`?"),
        None => String::new(),
    }
}

/// "`a`, `b` or `c`".
pub(crate) fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// `unknown option `tll` in `#[idempotent]`; expected one of `key`, `ttl` or
/// …; did you mean `ttl`?`: the one wording of an unknown option name, for
/// every attribute (the macros' option tables and the derive's
/// `#[state_machine(..)]`).
pub(crate) fn unknown_option(name: &str, attr: &str, options: &[&str]) -> String {
    format!(
        "unknown option `{name}` in {attr}; expected one of {}{}",
        one_of(options),
        suggestion(name, options.iter().copied())
    )
}

/// Edit distance over chars (optimal string alignment: an insertion, a
/// deletion, a substitution or a swap of two neighbours costs 1), so the
/// commonest typo, two letters swapped (`kye`), is as close as one wrong letter.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // d[i][j]: distance between a[..i] and b[..j].
    let mut d = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("ttl", "tll"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("kye", "key"), 1);
        assert_eq!(edit_distance("PAY_SUCESS", "PAY_SUCCESS"), 1);
    }

    #[test]
    fn suggests_only_close_names() {
        assert_eq!(
            did_you_mean("usr_id", ["user_id", "req_id"]),
            Some("user_id")
        );
        assert_eq!(did_you_mean("zzz", ["user_id", "req_id"]), None);
        assert_eq!(did_you_mean("kye", ["key", "ttl"]), Some("key"));
        assert_eq!(did_you_mean("tll", ["key", "ttl"]), Some("ttl"));
        assert_eq!(one_of(&["a", "b", "c"]), "`a`, `b` or `c`");
        assert_eq!(one_of(&["a"]), "`a`");
    }
}
