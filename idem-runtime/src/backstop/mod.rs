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
//! - this file: the chain walk and [`std_error`];
//! - `drivers`: one link as `sqlx::Error` or a driver's error type (feature-gated);
//! - `message`: [`parse_message`] for the MySQL/MariaDB and SQLite texts;
//! - `catalog`: the [`ConstraintCatalog`] trait;
//! - `registry`: the handle's backstops (declared names for `verify()`, matching a
//!   violation to a name through the cached catalog).

use std::error::Error as StdError;

mod catalog;
mod drivers;
mod message;
mod registry;

pub use catalog::{ConstraintCatalog, ConstraintDef};
pub use message::parse_message;
pub(crate) use registry::Backstops;

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
    /// Does this violation belong to the named constraint (without a catalog)?
    /// `None` means the database did not say (SQLite): ask a catalog.
    pub fn names(&self, constraint: &str) -> Option<bool> {
        self.constraint.as_deref().map(|c| c == constraint)
    }
}

/// Walks an error's `source()` chain and returns the first unique violation.
pub fn find_unique_violation(err: &(dyn StdError + 'static)) -> Option<UniqueViolation> {
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    let mut depth = 0;
    while let Some(e) = cur {
        if let Some(v) = drivers::inspect_link(e) {
            return Some(v);
        }
        depth += 1;
        if depth > 32 {
            break; // a cyclic or absurd chain: give up rather than loop
        }
        cur = e.source();
    }
    None
}

/// A plain `&dyn Error` view of any `std::error::Error`, for the `detect` hook of
/// the non-macro API: `.detect(idem::std_error)`.
pub fn std_error<E: StdError + 'static>(e: &E) -> Option<&(dyn StdError + 'static)> {
    Some(e)
}
