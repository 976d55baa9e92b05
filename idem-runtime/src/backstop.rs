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

use std::error::Error as StdError;

pub use crate::store::catalog::{ConstraintCatalog, ConstraintDef};

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
        if let Some(v) = inspect_link(e) {
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

#[allow(unused_variables)]
fn inspect_link(e: &(dyn StdError + 'static)) -> Option<UniqueViolation> {
    #[cfg(feature = "sql")]
    {
        if let Some(sqlx::Error::Database(db)) = e.downcast_ref::<sqlx::Error>() {
            return from_database_error(&**db);
        }
        if let Some(v) = from_driver_error(e) {
            return Some(v);
        }
    }
    None
}

#[cfg(feature = "sql")]
fn from_database_error(db: &dyn sqlx::error::DatabaseError) -> Option<UniqueViolation> {
    if !db.is_unique_violation() {
        return None;
    }
    if let Some(c) = db.constraint() {
        return Some(UniqueViolation {
            constraint: Some(c.to_owned()),
            table: db.table().map(str::to_owned),
            columns: Vec::new(),
        });
    }
    Some(parse_message(db.message()))
}

/// A driver error type sitting directly in a user's chain (not wrapped in `sqlx::Error`).
#[cfg(feature = "sql")]
fn from_driver_error(e: &(dyn StdError + 'static)) -> Option<UniqueViolation> {
    #[cfg(feature = "postgres")]
    if let Some(pg) = e.downcast_ref::<sqlx::postgres::PgDatabaseError>() {
        return from_database_error(pg);
    }
    #[cfg(feature = "mysql")]
    if let Some(my) = e.downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
        return from_database_error(my);
    }
    #[cfg(feature = "sqlite")]
    if let Some(lite) = e.downcast_ref::<sqlx::sqlite::SqliteError>() {
        return from_database_error(lite);
    }
    None
}

/// Parses the MySQL/MariaDB and SQLite unique-violation messages.
///
/// ```
/// use idem_runtime::backstop::parse_message;
/// let v = parse_message("Duplicate entry 'x' for key 'orders.uk_order_no'");
/// assert_eq!(v.constraint.as_deref(), Some("uk_order_no"));
/// let v = parse_message("UNIQUE constraint failed: orders.user_id, orders.req_id");
/// assert_eq!(v.table.as_deref(), Some("orders"));
/// assert_eq!(v.columns, ["user_id", "req_id"]);
/// ```
pub fn parse_message(msg: &str) -> UniqueViolation {
    const MY: &str = " for key '";
    if let Some(pos) = msg.rfind(MY) {
        let rest = &msg[pos + MY.len()..];
        let name = rest.strip_suffix('\'').unwrap_or(rest);
        let name = name.rsplit('.').next().unwrap_or(name);
        return UniqueViolation {
            constraint: Some(name.to_owned()),
            table: None,
            columns: Vec::new(),
        };
    }
    const LITE: &str = "UNIQUE constraint failed: ";
    if let Some(pos) = msg.find(LITE) {
        // An index on expressions is named instead: `… failed: index 'uk_name'`.
        if let Some(name) = msg[pos + LITE.len()..]
            .strip_prefix("index '")
            .and_then(|r| r.strip_suffix('\''))
        {
            return UniqueViolation {
                constraint: Some(name.to_owned()),
                table: None,
                columns: Vec::new(),
            };
        }
        let mut table = None;
        let mut columns = Vec::new();
        for col in msg[pos + LITE.len()..].split(',') {
            let col = col.trim();
            match col.split_once('.') {
                Some((t, c)) => {
                    table.get_or_insert_with(|| t.to_owned());
                    columns.push(c.to_owned());
                }
                None => columns.push(col.to_owned()),
            }
        }
        return UniqueViolation {
            constraint: None,
            table,
            columns,
        };
    }
    UniqueViolation {
        constraint: None,
        table: None,
        columns: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mysql_name_after_last_marker() {
        let v = parse_message("Duplicate entry 'a for key 'b' for key 'uk_order_no'");
        assert_eq!(v.constraint.as_deref(), Some("uk_order_no"));
    }

    #[test]
    fn sqlite_expression_index_is_named() {
        let v = parse_message("UNIQUE constraint failed: index 'uk_lower_email'");
        assert_eq!(v.constraint.as_deref(), Some("uk_lower_email"));
        assert!(v.columns.is_empty());
    }

    #[test]
    fn sqlite_columns() {
        let v = parse_message("UNIQUE constraint failed: t_order.order_no");
        assert_eq!(v.constraint, None);
        assert_eq!(v.table.as_deref(), Some("t_order"));
        assert_eq!(v.columns, ["order_no"]);
    }
}
