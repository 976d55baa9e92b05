//! Where the transactional guard keeps its records: the handle's record table
//! names ([`IdemBuilder::tx_tables`](crate::IdemBuilder::tx_tables), default
//! `idem_records`), with the statements of each dialect built once, on first use.
//! The handle keeps them in its extension slots, without knowing their type.

use std::sync::{LazyLock, OnceLock};

use super::statements::TxStatements;
use crate::sql_kernel::Dialect;
use crate::store::sql::TableNames;

/// The record table of in-transaction claims, and its statements per dialect.
#[derive(Debug, Default)]
pub(crate) struct TxTables {
    names: TableNames,
    postgres: OnceLock<TxStatements>,
    mysql: OnceLock<TxStatements>,
    sqlite: OnceLock<TxStatements>,
}

impl TxTables {
    pub(crate) fn new(names: TableNames) -> Self {
        TxTables {
            names,
            ..TxTables::default()
        }
    }

    /// The statements of `dialect`'s record table.
    pub(crate) fn statements(&self, dialect: Dialect) -> &TxStatements {
        let cell = match dialect {
            Dialect::Postgres => &self.postgres,
            Dialect::MySql => &self.mysql,
            Dialect::Sqlite => &self.sqlite,
        };
        cell.get_or_init(|| TxStatements::new(dialect, &self.names))
    }
}

/// The record tables of `idem`'s transactional guard: those its builder was
/// given, else the default names.
pub(crate) fn of(idem: &crate::Idem) -> &TxTables {
    static DEFAULT: LazyLock<TxTables> = LazyLock::new(TxTables::default);
    idem.inner.extensions.get::<TxTables>().unwrap_or(&DEFAULT)
}

impl crate::IdemBuilder {
    /// The record table of the transactional guard (`Guard::in_tx`,
    /// `#[idempotent(tx = …)]`) in the caller's database: default
    /// `idem_records`, the `SqlStore` default. Give the same names as your
    /// `SqlStore::with_tables` when you changed them, and create the table with
    /// `migrate()` or `idem::sql::ddl()`.
    pub fn tx_tables(mut self, names: TableNames) -> Self {
        self.extensions.insert(TxTables::new(names));
        self
    }
}
