//! Unique violations recognised from an error's text: what every sqlx version
//! (and every other driver that keeps the server's message) shares.
//!
//! The typed path (`drivers`) only sees idem's own `sqlx` types: an application
//! built on another sqlx minor has *different* types with the same names, and a
//! downcast to ours fails silently. So each link of the chain is also read as
//! text:
//! - its `Display`: PostgreSQL `duplicate key value violates unique constraint
//!   "uk"`, MySQL/MariaDB `1062 (23000): Duplicate entry '…' for key 'uk'`,
//!   SQLite `(code: 2067) UNIQUE constraint failed: t.c`;
//! - its `Debug`, for the SQLSTATE a localised PostgreSQL server still reports
//!   (`code: "23505"` beside `constraint: Some("uk")`, as sqlx's
//!   `PgDatabaseError` prints it) when the message is not in English.

use std::error::Error as StdError;
use std::fmt::Write as _;

use super::UniqueViolation;
use super::message::parse_message;

/// PostgreSQL's English message; the name follows in double quotes.
const PG_MESSAGE: &str = "duplicate key value violates unique constraint \"";
/// The SQLSTATE of a unique violation, as a `Debug` field prints it.
const PG_SQLSTATE: &str = "code: \"23505\"";
/// The constraint field of sqlx's `PgDatabaseError` `Debug`.
const PG_CONSTRAINT: &str = "constraint: Some(\"";
/// MySQL/MariaDB `ER_DUP_ENTRY` (1062) and `ER_DUP_ENTRY_WITH_KEY_NAME` (1586).
const MY_MESSAGE: &str = "Duplicate entry '";
const MY_KEY: &str = " for key '";
/// SQLite's extended codes `SQLITE_CONSTRAINT_UNIQUE` (2067) and
/// `SQLITE_CONSTRAINT_PRIMARYKEY` (1555) share this message prefix.
const LITE_MESSAGE: &str = "UNIQUE constraint failed: ";

/// The unique violation one link's text reports, if it reports one.
///
/// ```
/// use idem::backstop::from_text;
/// let pg = "duplicate key value violates unique constraint \"uk_order_no\"";
/// assert_eq!(from_text(pg, None).unwrap().constraint.as_deref(), Some("uk_order_no"));
/// let my = "1062 (23000): Duplicate entry 'A-1' for key 'orders.uk_order_no'";
/// assert_eq!(from_text(my, None).unwrap().constraint.as_deref(), Some("uk_order_no"));
/// let lite = "(code: 2067) UNIQUE constraint failed: orders.order_no";
/// assert_eq!(from_text(lite, None).unwrap().columns, ["order_no"]);
/// assert!(from_text("connection reset", None).is_none());
/// ```
///
/// `debug` is the link's `Debug` text, consulted for a PostgreSQL SQLSTATE
/// when the message itself is not recognised (a localised server).
pub fn from_text(display: &str, debug: Option<&str>) -> Option<UniqueViolation> {
    if let Some(pos) = display.find(PG_MESSAGE) {
        let rest = &display[pos + PG_MESSAGE.len()..];
        let name = rest.split('"').next().unwrap_or(rest);
        return Some(named(name));
    }
    if display.contains(MY_KEY) && display.contains(MY_MESSAGE) {
        return Some(parse_message(display));
    }
    if display.contains(LITE_MESSAGE) {
        return Some(parse_message(display));
    }
    let debug = debug?;
    if debug.contains(PG_SQLSTATE) {
        let name = debug.find(PG_CONSTRAINT).map(|pos| {
            let rest = &debug[pos + PG_CONSTRAINT.len()..];
            rest.split('"').next().unwrap_or(rest)
        });
        return Some(match name {
            Some(n) => named(n),
            None => UniqueViolation {
                constraint: None,
                table: None,
                columns: Vec::new(),
            },
        });
    }
    None
}

/// Reads one link of a chain as text: `Display` first, `Debug` only when the
/// display was not enough (both are formatted into one reused buffer).
pub(super) fn inspect_link(e: &(dyn StdError + 'static)) -> Option<UniqueViolation> {
    let mut buf = String::new();
    let _ = write!(buf, "{e}");
    if let Some(v) = from_text(&buf, None) {
        return Some(v);
    }
    buf.clear();
    let _ = write!(buf, "{e:?}");
    // `Debug` of an error usually contains its message too, escaped: only the
    // SQLSTATE is taken from it, so a quoted message cannot be misread.
    if buf.contains(PG_SQLSTATE) {
        return from_text("", Some(&buf));
    }
    None
}

fn named(name: &str) -> UniqueViolation {
    UniqueViolation::named(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localised_postgres_is_read_from_the_sqlstate() {
        let debug = "PgDatabaseError { severity: Error, code: \"23505\", message: \
                     \"llave duplicada viola restricción de unicidad «uk_x»\", \
                     constraint: Some(\"uk_x\"), routine: None }";
        let v = from_text(
            "llave duplicada viola restricción de unicidad «uk_x»",
            Some(debug),
        );
        assert_eq!(v.unwrap().constraint.as_deref(), Some("uk_x"));
    }

    #[test]
    fn other_sqlstates_and_plain_text_are_not_violations() {
        let debug = "PgDatabaseError { code: \"23503\", constraint: Some(\"fk_x\") }";
        assert!(from_text("insert violates foreign key", Some(debug)).is_none());
        assert!(from_text("no row for key 'a'", None).is_none());
    }

    #[test]
    fn sqlite_primary_key_and_mariadb_bare_name() {
        let v = from_text("(code: 1555) UNIQUE constraint failed: t.id", None).unwrap();
        assert_eq!(
            (v.table.as_deref(), v.columns),
            (Some("t"), vec!["id".into()])
        );
        let v = from_text("1062 (23000): Duplicate entry 'x' for key 'uk_a'", None).unwrap();
        assert_eq!(v.constraint.as_deref(), Some("uk_a"));
    }
}
