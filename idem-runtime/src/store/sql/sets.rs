//! The store's own table sets: the records with their fences, and the
//! one-time tokens (statement texts in `ddl.rs` and `token_sql.rs`).

use super::ddl::{Statements, records_statements, state_index};
use super::names::plain;
use super::table_set::{Registered, Shape, TableSet, TableSpec, at, count_expired};
use super::token_sql::TokenStatements;
use super::{Dialect, TableNames};

/// Records and their fences.
struct Records;

const RECORD_TABLES: &[TableSpec] = &[
    TableSpec {
        key: "records",
        suffix: "records",
        check: plain,
    },
    TableSpec {
        key: "fences",
        suffix: "fences",
        check: plain,
    },
];

impl TableSet for Records {
    fn name(&self) -> &'static str {
        "records"
    }
    fn tables(&self) -> &'static [TableSpec] {
        RECORD_TABLES
    }
    fn ddl(&self, d: Dialect, n: &TableNames, shape: Shape) -> Vec<String> {
        records_statements(d, n, shape)
    }
    fn upgrades(&self, d: Dialect, n: &TableNames) -> Vec<(&'static str, Vec<String>)> {
        vec![("0004_records_state_index", vec![state_index(d, n)])]
    }
    fn purge(&self, d: Dialect, n: &TableNames) -> Option<String> {
        Some(Statements::new(d, n).purge.text().to_string())
    }
    fn expired(&self, d: Dialect, n: &TableNames) -> Option<String> {
        Some(count_expired(d, &n.records(d), ""))
    }
    fn probes(&self, d: Dialect, n: &TableNames) -> Vec<(String, String)> {
        let probes = Statements::new(d, n).probes;
        probes
            .into_iter()
            .map(|(name, s)| (name, s.text().to_string()))
            .collect()
    }
    fn samples(&self, d: Dialect, n: &TableNames) -> [String; 2] {
        let t = n.records(d);
        let row = |key: &str, secs| {
            format!(
                "INSERT INTO {t} (idem_key, state, owner, fence, fingerprint, payload, expires_at) \
                 VALUES ('{key}', 1, {b}, 1, {b}, NULL, {exp})",
                b = bytes16(d),
                exp = at(d, secs),
            )
        };
        [row("conformance:old", -3600), row("conformance:live", 3600)]
    }
}

/// Sixteen zero bytes as a literal of `d`.
pub(crate) fn bytes16(d: Dialect) -> &'static str {
    match d {
        Dialect::Postgres => "'\\x00000000000000000000000000000000'::BYTEA",
        Dialect::MySql | Dialect::Sqlite => "X'00000000000000000000000000000000'",
    }
}

/// One-time tokens.
struct Tokens;

const TOKEN_TABLES: &[TableSpec] = &[TableSpec {
    key: "tokens",
    suffix: "tokens",
    check: plain,
}];

impl TableSet for Tokens {
    fn name(&self) -> &'static str {
        "tokens"
    }
    fn tables(&self) -> &'static [TableSpec] {
        TOKEN_TABLES
    }
    fn ddl(&self, d: Dialect, n: &TableNames, _: Shape) -> Vec<String> {
        super::token_sql::statements(d, n)
    }
    fn purge(&self, d: Dialect, n: &TableNames) -> Option<String> {
        Some(TokenStatements::new(d, n).purge.text().to_string())
    }
    fn expired(&self, d: Dialect, n: &TableNames) -> Option<String> {
        Some(count_expired(d, &n.tokens_q(d), ""))
    }
    fn probes(&self, d: Dialect, n: &TableNames) -> Vec<(String, String)> {
        let (name, s) = TokenStatements::new(d, n).probe;
        vec![(name, s.text().to_string())]
    }
    fn samples(&self, d: Dialect, n: &TableNames) -> [String; 2] {
        let t = n.tokens_q(d);
        let row = |key: &str, secs| {
            format!(
                "INSERT INTO {t} (token_key, owner, fence, lease_until, expires_at) \
                 VALUES ('{key}', NULL, 0, NULL, {})",
                at(d, secs)
            )
        };
        [row("conformance:old", -3600), row("conformance:live", 3600)]
    }
}

inventory::submit! { Registered::new(0, &Records) }
inventory::submit! { Registered::new(10, &Tokens) }
