//! [`TableNames`]: where idem's records, fences and one-time tokens live. The
//! names are spliced into every statement, so each one passes the SQL kernel's
//! identifier check (`sql_kernel::check_ident`: plain, not a reserved word)
//! when it is set.

use crate::sql_kernel::{Dialect, check_ident};
use crate::store::StoreError;

/// The names of idem's tables. Identifiers are checked (`[A-Za-z_][A-Za-z0-9_]*`,
/// at most 63 bytes, not a reserved word of PostgreSQL, MySQL/MariaDB or SQLite)
/// because they are spliced into SQL text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableNames {
    schema: Option<String>,
    records: String,
    fences: String,
    tokens: String,
    consume_log: String,
    outbox: String,
}

impl Default for TableNames {
    fn default() -> Self {
        TableNames {
            schema: None,
            records: "idem_records".into(),
            fences: "idem_fences".into(),
            tokens: "idem_tokens".into(),
            consume_log: super::consume_sql::DEFAULT_LOG_TABLE.into(),
            outbox: super::outbox_sql::DEFAULT_OUTBOX_TABLE.into(),
        }
    }
}

/// `StoreError::Config` naming the identifier and what is wrong with it.
fn ident(s: &str) -> Result<(), StoreError> {
    check_ident(s).map_err(|e| StoreError::config(e.to_string()))
}

impl TableNames {
    /// Records in `records`, fences in `<records>_fences`, one-time tokens in
    /// `<records>_tokens`, the consume log in `<records>_consume_log`, the
    /// outbox in `<records>_outbox`.
    pub fn new(records: &str) -> Result<Self, StoreError> {
        ident(records)?;
        let fences = format!("{records}_fences");
        ident(&fences)?;
        let tokens = format!("{records}_tokens");
        ident(&tokens)?;
        let consume_log = format!("{records}_consume_log");
        super::consume_sql::check_log_table(&consume_log).map_err(StoreError::config)?;
        let outbox = format!("{records}_outbox");
        super::outbox_sql::check_outbox_table(&outbox).map_err(StoreError::config)?;
        Ok(TableNames {
            schema: None,
            records: records.to_owned(),
            fences,
            tokens,
            consume_log,
            outbox,
        })
    }

    /// Overrides the fence table (MySQL/SQLite) or sequence (PostgreSQL) name.
    pub fn fences(mut self, fences: &str) -> Result<Self, StoreError> {
        ident(fences)?;
        self.fences = fences.to_owned();
        Ok(self)
    }

    /// Overrides the one-time token table name.
    pub fn tokens(mut self, tokens: &str) -> Result<Self, StoreError> {
        ident(tokens)?;
        self.tokens = tokens.to_owned();
        Ok(self)
    }

    /// Overrides the consume log table name (`#[consume_once(log = "...")]`
    /// must name the same table). Its indexes are named after it
    /// (`<name>_biz_uk`, `<name>_expires_idx`), so it is at most 50 bytes.
    pub fn consume_log(mut self, table: &str) -> Result<Self, StoreError> {
        super::consume_sql::check_log_table(table).map_err(StoreError::config)?;
        self.consume_log = table.to_owned();
        Ok(self)
    }

    /// Overrides the transactional outbox table name (`idem::outbox`'s
    /// `OutboxTable` and the relay must name the same table). Its indexes are
    /// named after it (`<name>_biz_uk`, `<name>_expires_idx`, ...), so it is at
    /// most 51 bytes.
    pub fn outbox(mut self, table: &str) -> Result<Self, StoreError> {
        super::outbox_sql::check_outbox_table(table).map_err(StoreError::config)?;
        self.outbox = table.to_owned();
        Ok(self)
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
        &self.records
    }

    /// The fences table or sequence name (unqualified).
    pub fn fences_name(&self) -> &str {
        &self.fences
    }

    /// The one-time token table name (unqualified).
    pub fn tokens_name(&self) -> &str {
        &self.tokens
    }

    /// The consume log table name (unqualified).
    pub fn consume_log_name(&self) -> &str {
        &self.consume_log
    }

    /// The outbox table name (unqualified).
    pub fn outbox_name(&self) -> &str {
        &self.outbox
    }

    /// The schema, if any.
    pub fn schema_name(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    fn qualify(&self, dialect: Dialect, name: &str) -> String {
        match (&self.schema, dialect) {
            (Some(s), Dialect::Postgres) => format!("{s}.{name}"),
            _ => name.to_owned(),
        }
    }

    pub(crate) fn records(&self, d: Dialect) -> String {
        self.qualify(d, &self.records)
    }

    pub(crate) fn fences_q(&self, d: Dialect) -> String {
        self.qualify(d, &self.fences)
    }

    pub(crate) fn tokens_q(&self, d: Dialect) -> String {
        self.qualify(d, &self.tokens)
    }

    pub(crate) fn consume_log_q(&self, d: Dialect) -> String {
        self.qualify(d, &self.consume_log)
    }

    pub(crate) fn outbox_q(&self, d: Dialect) -> String {
        self.qualify(d, &self.outbox)
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
