//! Where the transactional guard keeps its records: the handle's record table
//! names ([`IdemBuilder::tx_tables`](crate::IdemBuilder::tx_tables), default
//! `idem_records`), with the statements of each dialect built once, on first use.
//! It sits with the SQL kernel, below the handle, so the handle owns these tables
//! without knowing the transactional guard (an arrow up would close a circle).

use std::sync::OnceLock;

use super::{TableNames, TxStatements};
use crate::sql_kernel::Dialect;

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
