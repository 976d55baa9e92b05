//! SQL identifiers from configuration (table, schema and column names) are
//! spliced into statement text: bind parameters cannot stand for them. So each
//! one is checked before use: a plain identifier (`[A-Za-z_][A-Za-z0-9_]*`, at
//! most [`MAX_IDENT_BYTES`]) that is not a reserved word of any dialect idem
//! speaks. The check is what makes splicing safe; quoting ([`Ident::quoted`]) is
//! for callers whose names differ from a reserved word only in case rules.

use std::fmt;

use super::Dialect;
use super::reserved::is_reserved;

/// Longest identifier accepted: PostgreSQL truncates names at 63 bytes (two
/// names sharing their first 63 bytes would be one object); MySQL allows 64.
pub const MAX_IDENT_BYTES: usize = 63;

/// Why a name cannot be an identifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdentError {
    /// Not letters, digits and `_` (starting with a letter or `_`), or too long.
    #[error("`{0}` is not a plain SQL identifier (letters, digits, `_`, at most 63 bytes)")]
    Malformed(String),
    /// A word the SQL parser of PostgreSQL, MySQL/MariaDB or SQLite reserves: as
    /// a bare table name it is a syntax error (`CREATE TABLE order …`).
    #[error(
        "`{0}` is a reserved word in PostgreSQL, MySQL/MariaDB or SQLite; choose another name (for example `{0}_t`)"
    )]
    Reserved(String),
}

/// Checks that `s` can be spliced into SQL text as a bare identifier on every
/// dialect (see the module docs).
///
/// ```
/// use idem::db::{check_ident, IdentError};
/// assert!(check_ident("idem_records").is_ok());
/// assert!(matches!(check_ident("order"), Err(IdentError::Reserved(_))));
/// assert!(matches!(check_ident("Select"), Err(IdentError::Reserved(_))));
/// assert!(matches!(check_ident("x; DROP TABLE y"), Err(IdentError::Malformed(_))));
/// ```
pub fn check_ident(s: &str) -> Result<(), IdentError> {
    let mut chars = s.chars();
    let plain = s.len() <= MAX_IDENT_BYTES
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !plain {
        return Err(IdentError::Malformed(s.to_owned()));
    }
    if is_reserved(s) {
        return Err(IdentError::Reserved(s.to_owned()));
    }
    Ok(())
}

/// A checked identifier (see [`check_ident`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ident(String);

impl Ident {
    /// Checks `s` and keeps it.
    pub fn new(s: &str) -> Result<Ident, IdentError> {
        check_ident(s)?;
        Ok(Ident(s.to_owned()))
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name quoted for `dialect` (`"name"`, or `` `name` `` on MySQL). A
    /// quoted name is case-sensitive on PostgreSQL: `"Orders"` is not the
    /// `Orders` (folded to `orders`) of an unquoted `CREATE TABLE Orders`. The
    /// check already excludes the quote characters, so no escaping is needed.
    pub fn quoted(&self, dialect: Dialect) -> String {
        match dialect {
            Dialect::MySql => format!("`{}`", self.0),
            Dialect::Postgres | Dialect::Sqlite => format!("\"{}\"", self.0),
        }
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Ident {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_identifiers_pass() {
        for ok in ["idem_records", "_x", "a1", "orders_2024", &"a".repeat(63)] {
            assert_eq!(check_ident(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn malformed_names_are_refused() {
        for bad in [
            "",
            "1abc",
            "a.b",
            "a b",
            "x; DROP TABLE y",
            "é",
            &"a".repeat(64),
        ] {
            assert!(
                matches!(check_ident(bad), Err(IdentError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn reserved_words_are_refused_in_any_case() {
        // One per dialect that rejects it as a bare table name: PostgreSQL
        // (`user`, `analyse`), MariaDB (`key`, `value`), SQLite (`autoincrement`),
        // MySQL 8 (`rank`), all of them (`select`, `order`).
        for bad in [
            "select",
            "ORDER",
            "User",
            "analyse",
            "key",
            "value",
            "autoincrement",
            "rank",
        ] {
            assert!(
                matches!(check_ident(bad), Err(IdentError::Reserved(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn quoting_per_dialect() {
        let i = Ident::new("orders").unwrap();
        assert_eq!(i.quoted(Dialect::Postgres), "\"orders\"");
        assert_eq!(i.quoted(Dialect::Sqlite), "\"orders\"");
        assert_eq!(i.quoted(Dialect::MySql), "`orders`");
        assert_eq!(i.to_string(), "orders");
    }
}
