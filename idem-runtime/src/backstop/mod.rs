//! Finding a unique-constraint violation inside a business error.
//!
//! The database constraint is the last line of defence: when the fast store missed
//! a duplicate (outage, lost key, expiry), the business insert fails with a unique
//! violation, and the guard turns that into "the first request already did this".
//! The violation may be buried: a `sqlx::Error` inside the user's error enum, inside
//! an `anyhow::Error`, two levels deep. So we walk `source()` and look at each
//! link, downcasting to `sqlx::Error` and to the drivers' own error types.
//!
//! Each database names the constraint differently:
//! - PostgreSQL: `constraint()` on the error.
//! - MySQL/MariaDB: error 1062, `Duplicate entry '…' for key 'uk_name'`; the name
//!   is after the *last* `for key '` (the duplicated value may itself contain that
//!   text) and MySQL 8 writes `table.uk_name`.
//! - SQLite: `UNIQUE constraint failed: t.a, t.b`: only table and columns; a
//!   [`ConstraintCatalog`] maps them back to the index name.
//!
//! Detection must not depend on the caller's sqlx version: an application on
//! another sqlx minor has its own `sqlx::Error` type, which a downcast to ours
//! never matches. So each link is tried typed first (fast, exact), then as text
//! ([`from_text`]: the `Display` every version prints, and PostgreSQL's SQLSTATE
//! from `Debug`), and users can plug a [`ViolationDetector`] in front of both.
//! `verify()` checks that the handle's detection sees each declared backstop.
//!
//! - this file: [`find_unique_violation`] and [`std_error`];
//! - `detector`: the [`ViolationDetector`] trait, a handle's detectors, the chain walk;
//! - `drivers`: one link as `sqlx::Error` or a driver's error type (feature-gated);
//! - `text`: one link's `Display`/`Debug` text, whatever produced it;
//! - `message`: [`parse_message`] for the MySQL/MariaDB and SQLite texts;
//! - `probe`: sample violations `verify()` runs the detection on;
//! - `catalog`: the [`ConstraintCatalog`] trait;
//! - `declared`: the backstops the program declares (link-time registration
//!   of annotated functions, plain-API registrations on the handle);
//! - `registry`: the handle's backstops (declared names for `verify()`, matching a
//!   violation to a name through the cached catalog).

use std::error::Error as StdError;

mod catalog;
pub(crate) mod declared;
mod detector;
mod drivers;
mod message;
mod probe;
mod registry;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_catalog;
mod text;

pub use catalog::{ConstraintCatalog, ConstraintDef, Engine};
pub(crate) use detector::Detection;
pub use detector::ViolationDetector;
pub use message::parse_message;
pub(crate) use registry::Backstops;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub(crate) use sql_catalog::lookup_on;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use sql_catalog::{EXPRESSION, SqlConstraints};
pub use text::from_text;

/// A unique violation found in an error chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueViolation {
    /// The constraint or index name, when the database reports it.
    pub constraint: Option<String>,
    /// The table, when known (SQLite).
    pub table: Option<String>,
    /// The columns, when known (SQLite).
    pub columns: Vec<String>,
}

impl UniqueViolation {
    /// A violation of the constraint called `name` (what a custom
    /// [`ViolationDetector`] usually returns).
    pub fn named(name: &str) -> Self {
        UniqueViolation {
            constraint: Some(name.to_owned()),
            table: None,
            columns: Vec::new(),
        }
    }

    /// Does this violation belong to the named constraint (without a catalog)?
    /// `None` means the database did not say (SQLite): ask a catalog.
    pub fn names(&self, constraint: &str) -> Option<bool> {
        self.constraint.as_deref().map(|c| c == constraint)
    }

    /// Is this unnamed violation one of the index `def` a catalog found: its
    /// table (when the database said) and its columns, in any order?
    pub(crate) fn is_on(&self, def: &ConstraintDef) -> bool {
        self.table.as_deref().is_none_or(|t| t == def.table) && {
            let mut a = self.columns.clone();
            let mut b = def.columns.clone();
            a.sort();
            b.sort();
            a == b
        }
    }
}

/// Walks an error's `source()` chain and returns the first unique violation the
/// built-in detection sees (typed, then text; no custom detectors: a handle's
/// own detection adds those).
pub fn find_unique_violation(err: &(dyn StdError + 'static)) -> Option<UniqueViolation> {
    detector::walk(err, detector::builtin)
}

/// A plain `&dyn Error` view of any `std::error::Error`, for the `detect` hook of
/// the non-macro API: `.detect(idem::std_error)`.
pub fn std_error<E: StdError + 'static>(e: &E) -> Option<&(dyn StdError + 'static)> {
    Some(e)
}
