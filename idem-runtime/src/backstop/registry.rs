//! The backstops of one handle: the constraint names calls declared (so
//! `verify()` can check they exist) and the catalog that names a violation whose
//! error did not (SQLite), with its lookups cached.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use super::declared::{Declared, HandleDecls, Owners, closest};
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
    /// What the handle was told at build time (plain-API backstops, the
    /// modules whose `handle = …` functions it serves).
    decls: HandleDecls,
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
    #[cfg(test)]
    pub(crate) fn new(catalog: Option<Arc<dyn ConstraintCatalog>>, detection: Detection) -> Self {
        Self::declared(catalog, detection, HandleDecls::default())
    }

    pub(crate) fn declared(
        catalog: Option<Arc<dyn ConstraintCatalog>>,
        detection: Detection,
        decls: HandleDecls,
    ) -> Self {
        Backstops {
            names: RwLock::new(Vec::new()),
            catalog,
            cache: Mutex::new(HashMap::new()),
            detection,
            decls,
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
        let Ok(def) = self.definition(catalog.as_ref(), name).await else {
            return false;
        };
        match def {
            Some(d) => v.is_on(&d),
            None => false,
        }
    }

    /// The catalog's definition of `name`, cached per name (absence too).
    async fn definition(
        &self,
        catalog: &dyn ConstraintCatalog,
        name: &str,
    ) -> Result<Option<ConstraintDef>, ()> {
        let cached = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned();
        if let Some(d) = cached {
            return Ok(d);
        }
        match catalog.unique_constraint(name).await {
            Ok(d) => {
                self.cache
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(name.to_owned(), d.clone());
                Ok(d)
            }
            Err(e) => {
                tracing::warn!(constraint = name, error = %e, "constraint lookup failed");
                Err(())
            }
        }
    }

    /// A unique violation `v` that is not of the declared backstop `name`,
    /// where `name` does not exist at all: the declaration is wrong (a typo),
    /// so the duplicate cannot be told from the body's own errors. The text of
    /// the typed error the call then returns instead of the driver's raw
    /// message; `None` when `name` exists (the violation is the
    /// body's own) or no catalog can tell.
    pub(crate) async fn misdeclared(&self, name: &str, v: &UniqueViolation) -> Option<String> {
        let catalog = self.catalog.as_deref()?;
        if self.definition(catalog, name).await.ok()?.is_some() {
            return None;
        }
        let violated = match (&v.constraint, &v.table) {
            (Some(c), _) => format!("`{c}`"),
            (None, Some(t)) => format!("a unique index on `{t}` ({})", v.columns.join(", ")),
            (None, None) => "another unique constraint".to_owned(),
        };
        let existing = catalog.unique_names().await.unwrap_or_default();
        let hint = closest(name, &existing)
            .map(|c| format!("; did you mean `{c}`?"))
            .unwrap_or_default();
        Some(format!(
            "backstop `{name}` does not exist in the database{hint} (the body failed on a unique \
             violation of {violated}, which cannot be told from a duplicate; `Idem::verify()` \
             reports this at start-up)"
        ))
    }

    /// Every backstop in `declared` (the program's annotated functions) that
    /// this handle serves, every one registered or noted so far, plus `extra`,
    /// exists in the catalog; a missing one (or a missing catalog) is an
    /// `Error::Verify` naming it, who declared it and the closest existing
    /// name. The backstops of `handle = …` functions this handle does not serve
    /// are looked up too: a missing one is a warning (returned), naming the
    /// function and how to attribute it, since it may be another handle's.
    pub(crate) async fn verify(
        &self,
        extra: &[&str],
        declared: &[&Declared],
    ) -> Result<Vec<String>, Error> {
        let Owners {
            checked: mut owners,
            mut unattributed,
        } = self.decls.owners(declared);
        for n in self.names.read().unwrap_or_else(|p| p.into_inner()).iter() {
            owners.entry(n.clone()).or_default();
        }
        for n in extra {
            owners.entry((*n).to_owned()).or_default();
        }
        unattributed.retain(|n, _| !owners.contains_key(n));
        let mut warnings = Vec::new();
        let Some(catalog) = &self.catalog else {
            if !owners.is_empty() {
                let names: Vec<&String> = owners.keys().collect();
                return Err(Error::Verify(format!(
                    "backstops {names:?} declared but no constraint catalog configured (IdemBuilder::constraints)"
                )));
            }
            if !unattributed.is_empty() {
                let described: Vec<String> = unattributed
                    .iter()
                    .map(|(n, o)| describe_missing(n, o, None))
                    .collect();
                warnings.push(format!(
                    "this handle has no constraint catalog (IdemBuilder::constraints), so it \
                     cannot check backstops {}; {ATTRIBUTE}",
                    described.join(", ")
                ));
            }
            return Ok(warnings);
        };
        let mut missing = Vec::new();
        let mut unseen = Vec::new();
        for n in owners.keys() {
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
        let mut stray = Vec::new();
        for n in unattributed.keys() {
            match catalog.unique_constraint(n).await {
                Ok(Some(_)) => {}
                Ok(None) => stray.push(n.clone()),
                Err(e) => warnings.push(format!("looking up `{n}`: {e}")),
            }
        }
        // Only now: listing the catalog is for the messages.
        let existing = if missing.is_empty() && stray.is_empty() {
            Vec::new()
        } else {
            catalog.unique_names().await.unwrap_or_default()
        };
        if !missing.is_empty() {
            let described: Vec<String> = missing
                .iter()
                .map(|n| describe_missing(n, &owners[n], closest(n, &existing)))
                .collect();
            return Err(Error::Verify(format!(
                "unique constraint(s) not found: {}",
                described.join(", ")
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
        if !stray.is_empty() {
            let described: Vec<String> = stray
                .iter()
                .map(|n| describe_missing(n, &unattributed[n], closest(n, &existing)))
                .collect();
            warnings.push(format!(
                "unique constraint(s) not found: {}; {ATTRIBUTE}",
                described.join(", ")
            ));
        }
        Ok(warnings)
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

/// How a `handle = …` function is attributed to the handle it runs on.
const ATTRIBUTE: &str = "these functions name their handle with `handle = …` and \
    this handle does not serve their module: if they run on it, call \
    `.functions(module_path!())` in their module on its builder (or \
    `IdemBuilder::functions(\"my_app::orders\")`), and a missing backstop fails verify()";

/// `name`, and in parentheses who declared it and the closest existing name
/// when known: `uk_ordr_no (backstop of `app::create_order`; did you mean
/// `uk_order_no`?)`.
fn describe_missing(name: &str, owners: &[String], closest: Option<&str>) -> String {
    let mut notes = Vec::new();
    if !owners.is_empty() {
        notes.push(format!("backstop of {}", owners.join(", ")));
    }
    if let Some(c) = closest {
        notes.push(format!("did you mean `{c}`?"));
    }
    if notes.is_empty() {
        name.to_owned()
    } else {
        format!("{name} ({})", notes.join("; "))
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
