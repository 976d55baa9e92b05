//! Where `verify()` learns which backstops exist in the program, without a
//! second list:
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
//! expression is only evaluated per call. Every other handle still looks its
//! backstop up and warns when it is missing (or when it has no catalog to
//! look in), naming the function and how to attribute it.

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

    /// Every constraint `declared` and the handle's registrations name, with
    /// who declared it (in order, deduplicated), split by whether this handle
    /// is responsible for it: functions without `handle = …`, those with it in
    /// a module this handle serves, and its plain-API registrations are
    /// `checked`; the other `handle = …` functions are `unattributed` (this
    /// handle cannot tell whether they are its own).
    pub(crate) fn owners(&self, declared: &[&Declared]) -> Owners {
        let mut out = Owners::default();
        for d in declared {
            let Some(constraint) = d.constraint else {
                continue;
            };
            let to = if !d.own_handle || self.serves(d.function) {
                &mut out.checked
            } else {
                &mut out.unattributed
            };
            add(to, constraint, format!("`{}`", d.function));
        }
        for (owner, constraint) in &self.plain {
            add(&mut out.checked, constraint, format!("`{owner}`"));
        }
        out
    }
}

/// Declared backstops by constraint name, each with who declared it.
#[derive(Debug, Default)]
pub(crate) struct Owners {
    /// This handle answers for these: a missing one fails `verify()`.
    pub(crate) checked: BTreeMap<String, Vec<String>>,
    /// Functions with `handle = …` in no module this handle serves: a missing
    /// one is a warning, since it may be another handle's.
    pub(crate) unattributed: BTreeMap<String, Vec<String>>,
}

fn add(map: &mut BTreeMap<String, Vec<String>>, constraint: &str, owner: String) {
    let owners = map.entry(constraint.to_owned()).or_default();
    if !owners.contains(&owner) {
        owners.push(owner);
    }
}

/// Every `#[idempotent(backstop = "…")]` function linked into the program.
pub(crate) fn linked() -> Vec<&'static Declared> {
    inventory::iter::<Declared>.into_iter().collect()
}

/// The existing name closest to `name`, for "did you mean": within an edit
/// distance of a third of its length (at least 1), or else, among the names
/// that contain its words in order (the table's name left out of an index
/// name, a singular for a plural), the nearest.
pub(crate) fn closest<'a>(name: &str, existing: &'a [String]) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    let near = |e: &&String| distance(name, e) <= limit || has_words_of(e, name);
    existing
        .iter()
        .filter(near)
        .min_by_key(|e| distance(name, e))
        .map(String::as_str)
}

/// Does `existing` contain the `_`-separated words of `name` in order (each
/// word as it is or in its plural)? Only for names of three words or more:
/// `uk_no` says too little.
fn has_words_of(existing: &str, name: &str) -> bool {
    let lower = |s: &str| s.to_lowercase();
    let (name, existing) = (lower(name), lower(existing));
    let words: Vec<&str> = name.split('_').filter(|w| !w.is_empty()).collect();
    if words.len() < 3 {
        return false;
    }
    let mut theirs = existing.split('_');
    words.iter().all(|w| {
        theirs.any(|t| t == *w || t.strip_suffix('s') == Some(w) || t.strip_suffix("es") == Some(w))
    })
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

    /// A name that leaves out or shortens words of the real one (the table's
    /// name in an index name, a plural) is suggested too, though many edits away.
    #[test]
    fn closest_names_missing_or_shortened_words() {
        let existing = vec![
            "uk_app_orders_order_no".to_owned(),
            "uk_app_refunds_refund_no".to_owned(),
        ];
        assert_eq!(
            closest("uk_app_order_no", &existing),
            Some("uk_app_orders_order_no")
        );
        assert_eq!(
            closest("uk_refund_no", &existing),
            Some("uk_app_refunds_refund_no")
        );
        assert_eq!(closest("uk_app_payment_no", &existing), None);
        assert_eq!(closest("uk_no", &existing), None, "too little in common");
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
