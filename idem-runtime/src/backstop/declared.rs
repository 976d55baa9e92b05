//! Where `verify()` learns which backstops exist in the program, without a
//! second list (issue 24 n):
//!
//! - every `#[idempotent(backstop = "…")]` function registers its constraint
//!   at link time ([`Declared`], collected with the `inventory` crate: the
//!   expansion submits one entry from inside the function's body, so nothing
//!   is added to the user's module);
//! - a plain-API call's backstop is registered on the handle
//!   (`IdemBuilder::backstop`), since `guard(..).backstop(..)` is only seen
//!   when the call runs;
//! - what calls used so far (noted at call time) and `verify(&[..])`'s list.
//!
//! Which handle checks which function: a function without `handle = …` runs
//! on the installed global, so every handle's `verify()` checks it; a
//! function with its own `handle = …` is checked by the handles that serve its
//! module (`IdemBuilder::functions("my_app::orders")`), since the handle
//! expression is only evaluated per call.

use std::collections::BTreeMap;

/// One annotated function with a backstop, registered at link time by the
/// macro expansion ([`declare_backstop!`](crate::__declare_backstop)). Not
/// public API: see `idem::__private`.
#[derive(Debug)]
pub struct Declared {
    /// The function's path (`module_path!()::name`), from its spec.
    pub function: &'static str,
    /// Its `backstop = "…"` constraint, from its spec. The two fields are
    /// copied out of the spec (an immutable static) so this layer never names
    /// the macro surface's `Spec`, which sits above it.
    pub constraint: Option<&'static str>,
    /// The function names its handle (`handle = …`) instead of using the
    /// installed global.
    pub own_handle: bool,
}

inventory::collect!(Declared);

/// `declare_backstop!(SPEC, own_handle)`: submits a [`Declared`] for the
/// `static` spec of an `#[idempotent(backstop = "…")]` function. A macro so
/// the expansion stays one line and names no `inventory` item itself.
#[doc(hidden)]
#[macro_export]
macro_rules! __declare_backstop {
    ($spec:ident, $own_handle:expr) => {
        $crate::__private::inventory::submit! {
            $crate::__private::BackstopDecl {
                function: $spec.function,
                constraint: $spec.backstop,
                own_handle: $own_handle,
            }
        }
    };
}

/// The declarations a handle was given at build time.
#[derive(Debug, Clone, Default)]
pub(crate) struct HandleDecls {
    /// `(owner, constraint)` of plain-API calls.
    pub(crate) plain: Vec<(String, String)>,
    /// Module prefixes whose `handle = …` functions this handle serves.
    pub(crate) modules: Vec<String>,
}

impl HandleDecls {
    /// Does this handle serve the function at `path` (`a::b::f`)?
    fn serves(&self, path: &str) -> bool {
        self.modules.iter().any(|m| {
            path.strip_prefix(m.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
        })
    }

    /// Every constraint this handle must find, with who declared it (in
    /// order, deduplicated): link-time declarations it is responsible for,
    /// then its plain-API registrations.
    pub(crate) fn owners(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut add = |constraint: &str, owner: String| {
            let owners = out.entry(constraint.to_owned()).or_default();
            if !owners.contains(&owner) {
                owners.push(owner);
            }
        };
        for d in inventory::iter::<Declared> {
            let Some(constraint) = d.constraint else {
                continue;
            };
            if !d.own_handle || self.serves(d.function) {
                add(constraint, format!("`{}`", d.function));
            }
        }
        for (owner, constraint) in &self.plain {
            add(constraint, format!("`{owner}`"));
        }
        out
    }
}

/// The existing name closest to `name` (edit distance, at most a third of
/// its length and at least 1), for "did you mean".
pub(crate) fn closest<'a>(name: &str, existing: &'a [String]) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    existing
        .iter()
        .map(|e| (distance(name, e), e))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, e)| e.as_str())
}

/// Levenshtein distance over chars, case-insensitive (identifiers fold case
/// in MySQL and unquoted PostgreSQL).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diag + usize::from(ca != cb));
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_names_within_a_third_of_the_length() {
        let existing = vec!["uk_order_no".to_owned(), "uk_refund_no".to_owned()];
        assert_eq!(closest("uk_ordr_no", &existing), Some("uk_order_no"));
        assert_eq!(closest("UK_ORDER_NO", &existing), Some("uk_order_no"));
        assert_eq!(closest("uk_missing_backstop", &existing), None);
        assert_eq!(closest("x", &[]), None);
    }

    #[test]
    fn modules_are_served_by_prefix_at_path_boundaries() {
        let h = HandleDecls {
            plain: Vec::new(),
            modules: vec!["app::orders".into()],
        };
        assert!(h.serves("app::orders::create"));
        assert!(h.serves("app::orders"));
        assert!(!h.serves("app::orders_v2::create"));
        assert!(!h.serves("app::refunds::create"));
    }
}
