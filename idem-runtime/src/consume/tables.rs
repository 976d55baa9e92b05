//! The consume log as a table set of the SQL store: its name in
//! [`TableNames`], its DDL, purge, expired count and `verify()` probe. The
//! store creates, purges and probes it with the others, without knowing it.

use super::sql::{DEFAULT_LOG_TABLE, check_log_table, purge, statements};
use crate::sql_kernel::Dialect;
use crate::store::StoreError;
use crate::store::sql::{
    Registered, Shape, TableNames, TableSet, TableSpec, at, count_expired, never,
};

/// The key of the consume log's name in [`TableNames`].
pub(crate) const LOG_KEY: &str = "consume_log";

const _: () = assert!(DEFAULT_LOG_TABLE.len() == "idem_".len() + LOG_KEY.len());

struct ConsumeLog;

const TABLES: &[TableSpec] = &[TableSpec {
    key: LOG_KEY,
    suffix: LOG_KEY,
    check: check_log_table,
}];

impl TableSet for ConsumeLog {
    fn name(&self) -> &'static str {
        LOG_KEY
    }
    fn tables(&self) -> &'static [TableSpec] {
        TABLES
    }
    fn ddl(&self, d: Dialect, n: &TableNames, _: Shape) -> Vec<String> {
        statements(d, n)
    }
    fn purge(&self, d: Dialect, n: &TableNames) -> Option<String> {
        Some(purge(d, &n.consume_log_q(d)))
    }
    fn expired(&self, d: Dialect, n: &TableNames) -> Option<String> {
        Some(count_expired(d, &n.consume_log_q(d), ""))
    }
    fn probes(&self, d: Dialect, n: &TableNames) -> Vec<(String, String)> {
        let t = n.consume_log_q(d);
        let q = format!(
            "SELECT msg_key, biz_key, consumed_at, expires_at FROM {t} WHERE {}",
            never(d)
        );
        vec![(t, q)]
    }
    fn samples(&self, d: Dialect, n: &TableNames) -> [String; 2] {
        let t = n.consume_log_q(d);
        let row = |key: &str, secs| {
            format!(
                "INSERT INTO {t} (msg_key, biz_key, consumed_at, expires_at) \
                 VALUES ('{key}', NULL, {}, {})",
                at(d, 0),
                at(d, secs)
            )
        };
        [row("conformance:old", -3600), row("conformance:live", 3600)]
    }
}

inventory::submit! { Registered::new(20, &ConsumeLog) }

impl TableNames {
    /// Overrides the consume log table name (`#[consume_once(log = "...")]`
    /// must name the same table). Its indexes are named after it
    /// (`<name>_biz_uk`, `<name>_expires_idx`), so it is at most 51 bytes.
    pub fn consume_log(self, table: &str) -> Result<Self, StoreError> {
        self.table(LOG_KEY, table)
    }

    /// The consume log table name (unqualified).
    pub fn consume_log_name(&self) -> &str {
        self.get(LOG_KEY)
    }

    pub(crate) fn consume_log_q(&self, d: Dialect) -> String {
        self.qualified(LOG_KEY, d)
    }
}
