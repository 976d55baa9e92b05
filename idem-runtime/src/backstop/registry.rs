//! The backstops of one handle: the constraint names calls declared (so
//! `verify()` can check they exist) and the catalog that names a violation whose
//! error did not (SQLite), with its lookups cached.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use super::detector::Detection;
use super::{ConstraintCatalog, ConstraintDef, UniqueViolation};
use crate::error::Error;

/// Owned by the handle; the guard notes and matches, `Idem::verify` checks.
pub(crate) struct Backstops {
    /// Backstop constraints seen, for `verify()`.
    names: RwLock<Vec<String>>,
    catalog: Option<Arc<dyn ConstraintCatalog>>,
    /// Catalog answers by name: a violation is matched once per name, not per call.
    cache: Mutex<HashMap<String, Option<ConstraintDef>>>,
    /// How a violation is found in an error chain.
    detection: Detection,
}

impl std::fmt::Debug for Backstops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backstops")
            .field("names", &self.names)
            .field("catalog", &self.catalog.is_some())
            .field("detection", &self.detection)
            .finish_non_exhaustive()
    }
}

impl Backstops {
    pub(crate) fn new(catalog: Option<Arc<dyn ConstraintCatalog>>, detection: Detection) -> Self {
        Backstops {
            names: RwLock::new(Vec::new()),
            catalog,
            cache: Mutex::new(HashMap::new()),
            detection,
        }
    }

    /// The first unique violation in `err`'s chain, as this handle detects them.
    pub(crate) fn find(&self, err: &(dyn std::error::Error + 'static)) -> Option<UniqueViolation> {
        self.detection.find(err)
    }

    /// Remembers a constraint a call declared, for `verify()`.
    pub(crate) fn note(&self, name: &str) {
        if self
            .names
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|n| n == name)
        {
            return;
        }
        let mut names = self.names.write().unwrap_or_else(|p| p.into_inner());
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }

    /// Does `v` violate the constraint called `name`?
    pub(crate) async fn matches(&self, name: &str, v: &UniqueViolation) -> bool {
        if let Some(m) = v.names(name) {
            return m;
        }
        let Some(catalog) = &self.catalog else {
            // The database did not name the constraint and we cannot look it up:
            // any unique violation in the body's first insert is taken as the backstop.
            tracing::debug!(
                constraint = name,
                "unnamed unique violation taken as backstop (no catalog)"
            );
            return true;
        };
        let cached = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned();
        let def = match cached {
            Some(d) => d,
            None => match catalog.unique_constraint(name).await {
                Ok(d) => {
                    self.cache
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(name.to_owned(), d.clone());
                    d
                }
                Err(e) => {
                    tracing::warn!(constraint = name, error = %e, "constraint lookup failed");
                    return false;
                }
            },
        };
        match def {
            Some(d) => v.is_on(&d),
            None => false,
        }
    }

    /// Every constraint noted so far, plus `extra`, exists in the catalog; a
    /// missing one (or a missing catalog) is an `Error::Verify` naming it.
    pub(crate) async fn verify(&self, extra: &[&str]) -> Result<(), Error> {
        let mut names: Vec<String> = self.names.read().unwrap_or_else(|p| p.into_inner()).clone();
        names.extend(extra.iter().map(|s| (*s).to_owned()));
        names.sort();
        names.dedup();
        if names.is_empty() {
            return Ok(());
        }
        let Some(catalog) = &self.catalog else {
            return Err(Error::Verify(format!(
                "backstops {names:?} declared but no constraint catalog configured (IdemBuilder::constraints)"
            )));
        };
        let mut missing = Vec::new();
        let mut unseen = Vec::new();
        for n in &names {
            match catalog.unique_constraint(n).await {
                Ok(Some(def)) => {
                    if !self.sees(n, &def, catalog.engine()).await {
                        unseen.push(n.clone());
                    }
                }
                Ok(None) => missing.push(n.clone()),
                Err(e) => return Err(Error::Verify(format!("looking up `{n}`: {e}"))),
            }
        }
        if !missing.is_empty() {
            return Err(Error::Verify(format!(
                "unique constraint(s) not found: {}",
                missing.join(", ")
            )));
        }
        if !unseen.is_empty() {
            return Err(Error::Verify(format!(
                "the violation detection cannot see a unique violation of {} as the database \
                 reports it: a duplicate would reach callers as a raw error (check \
                 IdemBuilder::violation_detector, or keep the built-in detection on)",
                unseen.join(", ")
            )));
        }
        Ok(())
    }

    /// Does this handle's detection find and match a sample violation of `name`
    /// (any of the engine's sample forms)?
    async fn sees(&self, name: &str, def: &ConstraintDef, engine: Option<super::Engine>) -> bool {
        for (_, sample) in super::probe::samples(name, Some(def), engine) {
            let Some(v) = self.find(&sample) else {
                continue;
            };
            if self.matches(name, &v).await {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::store::{BoxFuture, StoreError};

    /// A catalog over a fixed list of indexes, counting its lookups.
    #[derive(Default)]
    struct Fixed {
        defs: Vec<(&'static str, &'static str, &'static [&'static str])>,
        lookups: AtomicUsize,
    }

    impl ConstraintCatalog for Fixed {
        fn unique_constraint<'a>(
            &'a self,
            name: &'a str,
        ) -> BoxFuture<'a, Result<Option<ConstraintDef>, StoreError>> {
            self.lookups.fetch_add(1, Ordering::SeqCst);
            let def = self
                .defs
                .iter()
                .find(|d| d.0 == name)
                .map(|d| ConstraintDef {
                    table: d.1.to_owned(),
                    columns: d.2.iter().map(|c| (*c).to_owned()).collect(),
                });
            Box::pin(async move { Ok(def) })
        }
    }

    fn unnamed(table: Option<&str>, columns: &[&str]) -> UniqueViolation {
        UniqueViolation {
            constraint: None,
            table: table.map(str::to_owned),
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    /// A named violation is matched by name; an unnamed one by the catalog's
    /// table and columns (in any order), looked up once per name.
    #[test]
    fn matches_by_name_or_through_the_cached_catalog() {
        let catalog = Arc::new(Fixed {
            defs: vec![("uk_order", "orders", &["user_id", "req_id"])],
            ..Fixed::default()
        });
        let b = Backstops::new(Some(catalog.clone()), Detection::default());
        let named = UniqueViolation {
            constraint: Some("uk_order".into()),
            table: None,
            columns: Vec::new(),
        };
        block_on(async {
            assert!(b.matches("uk_order", &named).await);
            assert!(!b.matches("uk_other", &named).await);
            assert_eq!(
                catalog.lookups.load(Ordering::SeqCst),
                0,
                "named: no lookup"
            );
            let v = unnamed(Some("orders"), &["req_id", "user_id"]);
            assert!(b.matches("uk_order", &v).await);
            assert!(b.matches("uk_order", &v).await);
            assert!(
                !b.matches(
                    "uk_order",
                    &unnamed(Some("refunds"), &["req_id", "user_id"])
                )
                .await
            );
            assert!(
                !b.matches("uk_order", &unnamed(Some("orders"), &["req_id"]))
                    .await
            );
            assert_eq!(catalog.lookups.load(Ordering::SeqCst), 1, "cached per name");
            assert!(!b.matches("uk_missing", &v).await);
            assert!(!b.matches("uk_missing", &v).await);
            assert_eq!(
                catalog.lookups.load(Ordering::SeqCst),
                2,
                "absence cached too"
            );
        });
        // Without a catalog an unnamed violation cannot be told apart: it counts.
        let bare = Backstops::new(None, Detection::default());
        assert!(block_on(
            bare.matches("uk_order", &unnamed(Some("t"), &["c"]))
        ));
    }

    /// `verify` checks every noted name once, plus the extra ones, and names
    /// what is missing; declared backstops without a catalog are an error.
    #[test]
    fn verify_names_missing_constraints() {
        let catalog = Arc::new(Fixed {
            defs: vec![("uk_a", "t", &["a"])],
            ..Fixed::default()
        });
        let b = Backstops::new(Some(catalog.clone()), Detection::default());
        block_on(async {
            assert!(b.verify(&[]).await.is_ok(), "nothing declared");
            b.note("uk_a");
            b.note("uk_a");
            assert!(b.verify(&["uk_a"]).await.is_ok());
            assert_eq!(catalog.lookups.load(Ordering::SeqCst), 1, "deduplicated");
            b.note("uk_b");
            match b.verify(&["uk_c"]).await {
                Err(Error::Verify(m)) => assert!(m.ends_with("uk_b, uk_c"), "{m}"),
                other => panic!("{other:?}"),
            }
            let bare = Backstops::new(None, Detection::default());
            bare.note("uk_a");
            match bare.verify(&[]).await {
                Err(Error::Verify(m)) => assert!(m.contains("no constraint catalog"), "{m}"),
                other => panic!("{other:?}"),
            }
        });
    }

    /// A detection that cannot see a declared backstop's violations (built-in
    /// detection off, a custom detector for something else) fails `verify`
    /// naming the backstop; the built-in detection sees every engine's form.
    #[test]
    fn verify_reports_detection_that_cannot_see_the_backstop() {
        let catalog = || {
            Arc::new(Fixed {
                defs: vec![("uk_a", "t", &["a"])],
                ..Fixed::default()
            })
        };
        let mut blind = Detection::default();
        blind.set_builtin(false);
        blind.push(Arc::new(|_: &(dyn std::error::Error + 'static)| None));
        let b = Backstops::new(Some(catalog()), blind);
        b.note("uk_a");
        match block_on(b.verify(&[])) {
            Err(Error::Verify(m)) => assert!(m.contains("cannot see") && m.contains("uk_a"), "{m}"),
            other => panic!("{other:?}"),
        }
        let mut custom = Detection::default();
        custom.set_builtin(false);
        custom.push(Arc::new(|e: &(dyn std::error::Error + 'static)| {
            e.to_string()
                .contains("uk_a")
                .then(|| UniqueViolation::named("uk_a"))
        }));
        let b = Backstops::new(Some(catalog()), custom);
        b.note("uk_a");
        assert!(
            block_on(b.verify(&[])).is_ok(),
            "a custom detector that sees it"
        );
        let b = Backstops::new(Some(catalog()), Detection::default());
        b.note("uk_a");
        assert!(block_on(b.verify(&[])).is_ok(), "built-in");
    }
}
