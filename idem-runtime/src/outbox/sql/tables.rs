//! The outbox as a table set of the SQL store: its name in [`TableNames`],
//! its DDL and migration steps, purge, expired count and `verify()` probes.
//! The store creates, upgrades, purges and probes it with the others,
//! without knowing it.

use super::ddl::{namespace_upgrade, order_locks, outbox_ddl, trace_upgrade};
use super::text::{DEFAULT_OUTBOX_TABLE, check_outbox_table, purge};
use crate::sql_kernel::Dialect;
use crate::store::StoreError;
use crate::store::sql::{
    Registered, Shape, TableNames, TableSet, TableSpec, at, count_expired, never,
};

/// The key of the outbox's name in [`TableNames`].
pub(crate) const OUTBOX_KEY: &str = "outbox";

const _: () = assert!(DEFAULT_OUTBOX_TABLE.len() == "idem_".len() + OUTBOX_KEY.len());

struct OutboxTables;

const TABLES: &[TableSpec] = &[TableSpec {
    key: OUTBOX_KEY,
    suffix: OUTBOX_KEY,
    check: check_outbox_table,
}];

impl TableSet for OutboxTables {
    fn name(&self) -> &'static str {
        OUTBOX_KEY
    }
    fn tables(&self) -> &'static [TableSpec] {
        TABLES
    }
    fn ddl(&self, d: Dialect, n: &TableNames, shape: Shape) -> Vec<String> {
        outbox_ddl(d, &n.outbox_q(d), n.outbox_name(), shape)
    }
    fn upgrades(&self, d: Dialect, n: &TableNames) -> Vec<(&'static str, Vec<String>)> {
        let t = n.outbox_q(d);
        vec![
            (
                "0002_outbox_namespaces",
                namespace_upgrade(d, &t, n.outbox_name(), n.schema_name()),
            ),
            ("0003_outbox_trace_context", trace_upgrade(d, &t)),
        ]
    }
    /// Sent messages past their retention (parked ones stay until an
    /// operator deals with them).
    fn purge(&self, d: Dialect, n: &TableNames) -> Option<String> {
        Some(purge(d, &n.outbox_q(d)))
    }
    fn expired(&self, d: Dialect, n: &TableNames) -> Option<String> {
        Some(count_expired(d, &n.outbox_q(d), "state = 1 AND "))
    }
    /// The table, and on MySQL/MariaDB its lock table.
    fn probes(&self, d: Dialect, n: &TableNames) -> Vec<(String, String)> {
        let t = n.outbox_q(d);
        let never = never(d);
        let mut probes = vec![(
            t.clone(),
            format!(
                "SELECT seq, namespace, id, topic, business_id, order_key, payload, state, attempts, \
                 owner, due_at, created_at, sent_at, expires_at, last_error, traceparent, tracestate \
                 FROM {t} WHERE {never}"
            ),
        )];
        if d == Dialect::MySql {
            let locks = order_locks(&t);
            let probe = format!("SELECT namespace, order_key FROM {locks} WHERE {never}");
            probes.push((locks, probe));
        }
        probes
    }
    fn samples(&self, d: Dialect, n: &TableNames) -> [String; 2] {
        let t = n.outbox_q(d);
        let payload = match d {
            Dialect::Postgres => "'\\x00'::BYTEA",
            _ => "X'00'",
        };
        let row = |id: &str, secs| {
            format!(
                "INSERT INTO {t} (id, topic, business_id, payload, state, attempts, due_at, \
                 created_at, sent_at, expires_at) \
                 VALUES ('{id}', 'conformance', '{id}', {payload}, 1, 0, {now}, {now}, {now}, {})",
                at(d, secs),
                now = at(d, 0),
            )
        };
        [row("conformance-old", -3600), row("conformance-live", 3600)]
    }
}

inventory::submit! { Registered::new(30, &OutboxTables) }

impl TableNames {
    /// Overrides the transactional outbox table name (`idem::outbox`'s
    /// `OutboxTable` and the relay must name the same table). Its indexes are
    /// named after it (`<name>_biz_uk`, `<name>_expires_idx`, ...), so it is at
    /// most 51 bytes.
    pub fn outbox(self, table: &str) -> Result<Self, StoreError> {
        self.table(OUTBOX_KEY, table)
    }

    /// The outbox table name (unqualified).
    pub fn outbox_name(&self) -> &str {
        self.get(OUTBOX_KEY)
    }

    pub(crate) fn outbox_q(&self, d: Dialect) -> String {
        self.qualified(OUTBOX_KEY, d)
    }
}
