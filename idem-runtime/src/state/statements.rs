//! The statements of one transition, built once per table and dialect from
//! checked identifiers (`db::Ident`): the conditional `UPDATE`, the read of the
//! current state when it matched nothing, and the compensating update of a
//! transition made without a savepoint.

use std::sync::Arc;

use crate::db::{Dialect, Ident};
use crate::error::Error;

/// Where the machine's rows live: table and column names as configured.
#[derive(Debug, Clone, Copy)]
pub struct Columns<'a> {
    /// The table (`t_order`).
    pub table: &'a str,
    /// The business key's column; must be unique (`order_no`).
    pub key_column: &'a str,
    /// The state column (default `status`).
    pub state_column: &'a str,
    /// A version column incremented by every transition, if any.
    pub version_column: Option<&'a str>,
}

impl Columns<'_> {
    /// The defaults for a table and key column: state in `status`, no version.
    pub const fn new<'a>(table: &'a str, key_column: &'a str) -> Columns<'a> {
        Columns {
            table,
            key_column,
            state_column: "status",
            version_column: None,
        }
    }
}

/// The statement texts, shared (`Arc`) so a query does not copy them.
#[derive(Debug, Clone)]
pub(crate) struct Statements {
    /// Binds: target state, key, then each source state.
    update: Vec<Arc<str>>,
    /// Binds: key.
    pub(crate) current: Arc<str>,
    /// The compensating statement of a transition made without a savepoint
    /// whose body failed: the row back to its source state (and version).
    /// Binds: source state, key, target state.
    pub(crate) undo: Arc<str>,
}

impl Statements {
    /// Checks every identifier (a bad one is `Error::Config`) and writes the
    /// statements for up to `max_from` source states.
    pub(crate) fn build(dialect: Dialect, c: &Columns<'_>, max_from: usize) -> Result<Self, Error> {
        let ident = |what: &str, name: &str| {
            Ident::new(name)
                .map(|i| i.quoted(dialect))
                .map_err(|e| Error::Config(format!("state transition {what}: {e}")))
        };
        let table = ident("table", c.table)?;
        let key = ident("key_column", c.key_column)?;
        let state = ident("state_column", c.state_column)?;
        let version = match c.version_column {
            Some(v) => Some(ident("version_column", v)?),
            None => None,
        };
        let p = |n: usize| match dialect {
            Dialect::Postgres => format!("${n}"),
            _ => "?".to_owned(),
        };
        let set_version = version
            .as_ref()
            .map(|v| format!(", {v} = {v} + 1"))
            .unwrap_or_default();
        let update = (1..=max_from.max(1))
            .map(|n| {
                let sources: Vec<String> = (0..n).map(|i| p(3 + i)).collect();
                Arc::from(format!(
                    "UPDATE {table} SET {state} = {}{set_version} WHERE {key} = {} AND {state} IN ({})",
                    p(1),
                    p(2),
                    sources.join(", ")
                ))
            })
            .collect();
        // MySQL's plain SELECT reads the transaction's snapshot, which may predate
        // the commit that made the UPDATE match nothing: read the latest row.
        let lock = match dialect {
            Dialect::Sqlite => "",
            _ => " FOR UPDATE",
        };
        let current = Arc::from(format!(
            "SELECT {state} FROM {table} WHERE {key} = {}{lock}",
            p(1)
        ));
        let unset_version = version
            .as_ref()
            .map(|v| format!(", {v} = {v} - 1"))
            .unwrap_or_default();
        let undo = Arc::from(format!(
            "UPDATE {table} SET {state} = {}{unset_version} WHERE {key} = {} AND {state} = {}",
            p(1),
            p(2),
            p(3)
        ));
        Ok(Statements {
            update,
            current,
            undo,
        })
    }

    /// The `UPDATE` for `n` source states.
    pub(crate) fn update(&self, n: usize) -> Option<Arc<str>> {
        self.update.get(n.checked_sub(1)?).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_per_dialect() {
        let mut c = Columns::new("t_order", "order_no");
        c.version_column = Some("ver");
        let pg = Statements::build(Dialect::Postgres, &c, 2).unwrap();
        assert_eq!(
            &*pg.update(2).unwrap(),
            "UPDATE \"t_order\" SET \"status\" = $1, \"ver\" = \"ver\" + 1 WHERE \"order_no\" = $2 AND \"status\" IN ($3, $4)"
        );
        assert_eq!(
            &*pg.undo,
            "UPDATE \"t_order\" SET \"status\" = $1, \"ver\" = \"ver\" - 1 WHERE \"order_no\" = $2 AND \"status\" = $3"
        );
        assert_eq!(
            &*pg.current,
            "SELECT \"status\" FROM \"t_order\" WHERE \"order_no\" = $1 FOR UPDATE"
        );
        let my = Statements::build(Dialect::MySql, &Columns::new("t", "k"), 1).unwrap();
        assert_eq!(
            &*my.update(1).unwrap(),
            "UPDATE `t` SET `status` = ? WHERE `k` = ? AND `status` IN (?)"
        );
        assert!(my.update(2).is_none() && my.update(0).is_none());
        let lite = Statements::build(Dialect::Sqlite, &Columns::new("t", "k"), 1).unwrap();
        assert_eq!(
            &*lite.current,
            "SELECT \"status\" FROM \"t\" WHERE \"k\" = ?"
        );
    }

    #[test]
    fn bad_identifiers_are_config_errors() {
        for c in [
            Columns::new("order", "k"),
            Columns::new("t; DROP TABLE x", "k"),
            Columns {
                version_column: Some(""),
                ..Columns::new("t", "k")
            },
        ] {
            let e = Statements::build(Dialect::Postgres, &c, 1).unwrap_err();
            assert!(matches!(e, Error::Config(_)), "{e:?}");
        }
    }
}
