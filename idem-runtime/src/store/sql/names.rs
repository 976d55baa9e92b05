//! [`TableNames`]: where idem's records, fences, one-time tokens and the
//! registered table sets live. The
//! names are spliced into every statement, so each one passes the SQL kernel's
//! identifier check (`sql_kernel::check_ident`: plain, not a reserved word)
//! when it is set.

use std::collections::BTreeMap;

use super::table_set::table_specs;
use crate::sql_kernel::{Dialect, check_ident};
use crate::store::StoreError;

/// The names of idem's tables: a PostgreSQL schema, a base name (the records
/// table's) the other tables are named after, and per-table overrides.
/// Identifiers are checked (`[A-Za-z_][A-Za-z0-9_]*`, at most 63 bytes, not a
/// reserved word of PostgreSQL, MySQL/MariaDB or SQLite) because they are
/// spliced into SQL text. Each table is known by a key
/// ([`TableSpec::key`](super::TableSpec::key)): `records`, `fences`, `tokens`, and those of the
/// techniques' table sets ([`table_sets`](super::table_sets)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableNames {
    schema: Option<String>,
    /// Every registered table's name, by key.
    names: BTreeMap<&'static str, String>,
}

impl Default for TableNames {
    fn default() -> Self {
        let names = table_specs()
            .map(|t| (t.key, format!("idem_{}", t.suffix)))
            .collect();
        TableNames {
            schema: None,
            names,
        }
    }
}

/// `StoreError::Config` naming the identifier and what is wrong with it.
fn ident(s: &str) -> Result<(), StoreError> {
    check_ident(s).map_err(|e| StoreError::config(e.to_string()))
}

/// The identifier check, as a [`TableSpec::check`](super::TableSpec::check).
pub(crate) fn plain(s: &str) -> Result<(), String> {
    check_ident(s).map_err(|e| e.to_string())
}

/// The key of the records table, the base every default name derives from.
const RECORDS: &str = "records";

impl TableNames {
    /// Records in `records`, and every other table named after it:
    /// `<records>_fences`, `<records>_tokens`, `<records>_consume_log`,
    /// `<records>_outbox`.
    pub fn new(records: &str) -> Result<Self, StoreError> {
        let mut names = BTreeMap::new();
        for t in table_specs() {
            let name = match t.key {
                RECORDS => records.to_owned(),
                _ => format!("{records}_{}", t.suffix),
            };
            (t.check)(&name).map_err(StoreError::config)?;
            names.insert(t.key, name);
        }
        Ok(TableNames {
            schema: None,
            names,
        })
    }

    /// Overrides the name of the table known by `key` (see
    /// [`TableSpec::key`](super::TableSpec::key)); an unknown key or a name the table refuses is
    /// `StoreError::Config`.
    pub fn table(mut self, key: &str, name: &str) -> Result<Self, StoreError> {
        let Some(spec) = table_specs().find(|t| t.key == key) else {
            return Err(StoreError::config(format!("no table is known as `{key}`")));
        };
        (spec.check)(name).map_err(StoreError::config)?;
        self.names.insert(spec.key, name.to_owned());
        Ok(self)
    }

    /// The name of the table known by `key` (unqualified), if one is.
    pub fn name_of(&self, key: &str) -> Option<&str> {
        self.names.get(key).map(String::as_str)
    }

    /// Every table's key and name (unqualified), by key.
    pub fn all(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.names.iter().map(|(k, v)| (*k, v.as_str()))
    }

    /// Overrides the fence table (MySQL/SQLite) or sequence (PostgreSQL) name.
    pub fn fences(self, fences: &str) -> Result<Self, StoreError> {
        self.table("fences", fences)
    }

    /// Overrides the one-time token table name.
    pub fn tokens(self, tokens: &str) -> Result<Self, StoreError> {
        self.table("tokens", tokens)
    }

    /// Puts every object in a PostgreSQL schema (ignored by the other dialects,
    /// where the connection's database decides).
    pub fn schema(mut self, schema: &str) -> Result<Self, StoreError> {
        ident(schema)?;
        self.schema = Some(schema.to_owned());
        Ok(self)
    }

    /// The records table name (unqualified).
    pub fn records_name(&self) -> &str {
        self.get(RECORDS)
    }

    /// The fences table or sequence name (unqualified).
    pub fn fences_name(&self) -> &str {
        self.get("fences")
    }

    /// The one-time token table name (unqualified).
    pub fn tokens_name(&self) -> &str {
        self.get("tokens")
    }

    /// The schema, if any.
    pub fn schema_name(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    /// The name of a registered table (every key a set declares has one).
    pub(crate) fn get(&self, key: &str) -> &str {
        self.name_of(key).unwrap_or_default()
    }

    fn qualify(&self, dialect: Dialect, name: &str) -> String {
        match (&self.schema, dialect) {
            (Some(s), Dialect::Postgres) => format!("{s}.{name}"),
            _ => name.to_owned(),
        }
    }

    /// The table known by `key`, schema-qualified on PostgreSQL.
    pub(crate) fn qualified(&self, key: &str, d: Dialect) -> String {
        self.qualify(d, self.get(key))
    }

    pub(crate) fn records(&self, d: Dialect) -> String {
        self.qualified(RECORDS, d)
    }

    pub(crate) fn fences_q(&self, d: Dialect) -> String {
        self.qualified("fences", d)
    }

    pub(crate) fn tokens_q(&self, d: Dialect) -> String {
        self.qualified("tokens", d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_checked() {
        assert!(TableNames::new("idem_records").is_ok());
        assert!(TableNames::new("x; DROP TABLE y").is_err());
        assert!(TableNames::new("1abc").is_err());
        assert!(TableNames::new("").is_err());
        assert!(TableNames::default().schema("a.b").is_err());
        assert!(TableNames::default().tokens("t; --").is_err());
        assert_eq!(TableNames::default().tokens_name(), "idem_tokens");
        assert_eq!(TableNames::new("r").unwrap().tokens_name(), "r_tokens");
        assert!(TableNames::new(&"a".repeat(64)).is_err());
    }

    #[test]
    fn reserved_words_are_refused() {
        for bad in [
            TableNames::new("order"),
            TableNames::new("SELECT"),
            TableNames::default().schema("user"),
            TableNames::default().fences("table"),
            TableNames::default().tokens("select"),
        ] {
            match bad {
                Err(StoreError::Config(m)) => assert!(m.contains("reserved word"), "{m}"),
                other => panic!("{other:?}"),
            }
        }
        // A reserved word inside a longer name is fine.
        assert!(TableNames::new("orders").is_ok());
        assert!(TableNames::default().schema("user_data").is_ok());
    }
}
