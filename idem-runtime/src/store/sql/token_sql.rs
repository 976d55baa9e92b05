//! The SQL text of the one-time token table: its DDL (part of [`ddl`](super::ddl)
//! and `migrate()`) and the statements of `store/sql/token.rs`, per dialect.
//! Kept apart from `ddl.rs` (the records' text) so each file holds one table.
//!
//! | column        | PostgreSQL    | MySQL/MariaDB         | SQLite              |
//! |---------------|---------------|-----------------------|---------------------|
//! | `token_key`   | `TEXT` PK     | `VARBINARY(768)` PK   | `TEXT` PK           |
//! | `owner`       | `BYTEA` (16), `NULL` while issued | `BINARY(16)` | `BLOB`  |
//! | `fence`       | `BIGINT` (the last take's; 0 before any) | `BIGINT` | `INTEGER` |
//! | `lease_until` | `TIMESTAMPTZ`, `NULL` while issued | `DATETIME(6)` (UTC) | `INTEGER` (µs) |
//! | `expires_at`  | `TIMESTAMPTZ` | `DATETIME(6)` (UTC)   | `INTEGER` (µs since the epoch, ms resolution) |
//!
//! The key is the token's scope and digest (the store never sees a token). A row
//! is *issued* when `owner` is `NULL`, else *consuming* until `lease_until`; its
//! `expires_at` is set by `issue` and kept through the whole cycle. Every time is
//! the database clock's, as for records. A take's fence is `nextval` of the
//! records' fence sequence (PostgreSQL) or `max(fence + 1, now µs)` of the row
//! (MySQL, SQLite): larger than every earlier take's of this token either way.

use super::stmt::Stmt;
use super::{Dialect, PURGE_BATCH, TableNames};

/// The token table's DDL statements, appended to the records' by `ddl()`.
pub(crate) fn statements(d: Dialect, n: &TableNames) -> Vec<String> {
    let k = n.tokens_q(d);
    let idx = format!("{}_expires_idx", n.tokens_name());
    match d {
        Dialect::Postgres => vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {k} (\n  \
                 token_key TEXT PRIMARY KEY,\n  \
                 owner BYTEA,\n  \
                 fence BIGINT NOT NULL,\n  \
                 lease_until TIMESTAMPTZ,\n  \
                 expires_at TIMESTAMPTZ NOT NULL\n)"
            ),
            format!("CREATE INDEX IF NOT EXISTS {idx} ON {k} (expires_at)"),
        ],
        Dialect::MySql => vec![format!(
            "CREATE TABLE IF NOT EXISTS {k} (\n  \
             token_key VARBINARY(768) NOT NULL PRIMARY KEY,\n  \
             owner BINARY(16) NULL,\n  \
             fence BIGINT NOT NULL,\n  \
             lease_until DATETIME(6) NULL,\n  \
             expires_at DATETIME(6) NOT NULL,\n  \
             KEY {idx} (expires_at)\n) ENGINE=InnoDB"
        )],
        Dialect::Sqlite => vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {k} (\n  \
                 token_key TEXT NOT NULL PRIMARY KEY,\n  \
                 owner BLOB,\n  \
                 fence INTEGER NOT NULL,\n  \
                 lease_until INTEGER,\n  \
                 expires_at INTEGER NOT NULL\n)"
            ),
            format!("CREATE INDEX IF NOT EXISTS {idx} ON {k} (expires_at)"),
        ],
    }
}

/// The token statements of a store, prepared once per store. Binds are named
/// per statement; every dialect takes them in the same order except `take`.
#[derive(Debug, Clone)]
pub(crate) struct TokenStatements {
    /// Inserts an issued row, or replaces an expired one (binds: key, ttl µs).
    pub(crate) issue: Stmt,
    /// issued (or consuming with a lapsed lease, not by the caller) → consuming.
    /// PostgreSQL (binds: key, owner, lease µs): one statement answering
    /// `taken, owner, fence, remaining_us` from the update, else from the live
    /// row as the statement's snapshot saw it. MySQL (binds: owner, lease µs,
    /// key, owner): an `UPDATE` whose `LAST_INSERT_ID` is the new fence. SQLite
    /// (binds: key, owner, lease µs): `UPDATE … RETURNING fence`.
    pub(crate) take: Stmt,
    /// The live row of a key: `owner, fence, remaining_us` of its lease (binds: key).
    /// MySQL and SQLite only: PostgreSQL's `take` answers it.
    #[cfg_attr(not(any(feature = "mysql", feature = "sqlite")), allow(dead_code))]
    pub(crate) read: Stmt,
    /// Owner-checked lease extension of a live token (binds: lease µs, key, owner).
    pub(crate) renew: Stmt,
    /// Binds: key. Deletes the token whoever holds it (`TokenStore::revoke`).
    pub(crate) revoke: Stmt,
    /// Owner-checked consuming → issued of a live token (binds: key, owner).
    pub(crate) give_back: Stmt,
    /// Is there a live row for the key? (binds: key).
    pub(crate) live: Stmt,
    /// Deletes up to `PURGE_BATCH` expired tokens.
    pub(crate) purge: Stmt,
    /// `verify()` probe: (table name, statement reading every column).
    pub(crate) probe: (String, Stmt),
}

const COLS: &str = "token_key, owner, fence, lease_until, expires_at";

impl TokenStatements {
    pub(crate) fn new(d: Dialect, n: &TableNames) -> Self {
        let k = n.tokens_q(d);
        match d {
            Dialect::Postgres => Self::postgres(&k, &n.fences_q(d)),
            Dialect::MySql => Self::mysql(&k),
            Dialect::Sqlite => Self::sqlite(&k),
        }
    }

    fn postgres(k: &str, seq: &str) -> Self {
        let plus =
            |p: &str| format!("statement_timestamp() + ({p}::INT8 * INTERVAL '1 microsecond')");
        // The clock is the statement's (`statement_timestamp()`), never the
        // transaction's start (`now()`), as in the records' statements (ddl.rs).
        // Lease left by the clock at evaluation, not at our statement's start:
        // a take that started after ours and committed before our snapshot
        // would otherwise show more than its whole lease left.
        let remaining = "(EXTRACT(EPOCH FROM (lease_until - clock_timestamp())) * 1000000)::INT8";
        let s = |t: String| Stmt::from(t);
        TokenStatements {
            issue: s(format!(
                "INSERT INTO {k} AS r (token_key, owner, fence, lease_until, expires_at) \
                 VALUES ($1, NULL, 0, NULL, {exp}) \
                 ON CONFLICT (token_key) DO UPDATE SET owner = NULL, lease_until = NULL, \
                   expires_at = EXCLUDED.expires_at \
                 WHERE r.expires_at <= statement_timestamp()",
                exp = plus("$2"),
            )),
            // `cur` and the update read one snapshot. When a concurrent take
            // commits first, the update re-checks the row, finds it taken and
            // changes nothing, while `cur` may still show it issued: the store
            // then asks again (see `token.rs`).
            take: s(format!(
                "WITH cur AS (\
                   SELECT owner, fence, {remaining} AS remaining_us FROM {k} \
                   WHERE token_key = $1 AND expires_at > statement_timestamp()), \
                 upd AS (\
                   UPDATE {k} SET owner = $2, fence = nextval('{seq}'), lease_until = {lease} \
                   WHERE token_key = $1 AND expires_at > statement_timestamp() \
                     AND (owner IS NULL OR (lease_until <= statement_timestamp() AND owner <> $2)) \
                   RETURNING fence) \
                 SELECT TRUE AS taken, $2::BYTEA AS owner, fence, 0::INT8 AS remaining_us FROM upd \
                 UNION ALL \
                 SELECT FALSE, owner, fence, remaining_us FROM cur \
                 WHERE NOT EXISTS (SELECT 1 FROM upd)",
                lease = plus("$3"),
            )),
            read: s(format!(
                "SELECT owner, fence, {remaining} AS remaining_us FROM {k} \
                 WHERE token_key = $1 AND expires_at > statement_timestamp()"
            )),
            renew: s(format!(
                "UPDATE {k} SET lease_until = {lease} \
                 WHERE token_key = $2 AND owner = $3 AND expires_at > statement_timestamp()",
                lease = plus("$1"),
            )),
            revoke: s(format!("DELETE FROM {k} WHERE token_key = $1")),
            give_back: s(format!(
                "UPDATE {k} SET owner = NULL, lease_until = NULL \
                 WHERE token_key = $1 AND owner = $2 AND expires_at > statement_timestamp()"
            )),
            live: s(format!(
                "SELECT 1 FROM {k} WHERE token_key = $1 AND expires_at > statement_timestamp()"
            )),
            purge: s(format!(
                "DELETE FROM {k} WHERE token_key IN (\
                   SELECT token_key FROM {k} WHERE expires_at <= statement_timestamp() LIMIT {PURGE_BATCH} \
                   FOR UPDATE SKIP LOCKED) \
                 AND expires_at <= statement_timestamp()"
            )),
            probe: (
                k.to_owned(),
                s(format!("SELECT {COLS} FROM {k} WHERE FALSE")),
            ),
        }
    }

    fn mysql(k: &str) -> Self {
        let now = "UTC_TIMESTAMP(6)";
        let now_us = format!("TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {now})");
        let expired = format!("expires_at <= {now}");
        let s = |t: String| Stmt::from(t);
        TokenStatements {
            // `expires_at` last: MySQL assigns left to right and the conditions read it.
            issue: s(format!(
                "INSERT INTO {k} (token_key, owner, fence, lease_until, expires_at) \
                 VALUES (?, NULL, 0, NULL, {now} + INTERVAL ? MICROSECOND) \
                 ON DUPLICATE KEY UPDATE \
                   owner = IF({expired}, NULL, owner), \
                   lease_until = IF({expired}, NULL, lease_until), \
                   expires_at = IF({expired}, VALUES(expires_at), expires_at)"
            )),
            // Rows matched (the driver sets CLIENT_FOUND_ROWS) is 1 exactly when
            // the row was takeable; `LAST_INSERT_ID(x)` puts the new fence in the
            // OK packet, so the take needs no second statement.
            take: s(format!(
                "UPDATE {k} SET owner = ?, \
                   fence = LAST_INSERT_ID(GREATEST(fence + 1, {now_us})), \
                   lease_until = {now} + INTERVAL ? MICROSECOND \
                 WHERE token_key = ? AND expires_at > {now} \
                   AND (owner IS NULL OR (lease_until <= {now} AND owner <> ?))"
            )),
            read: s(format!(
                "SELECT owner, fence, TIMESTAMPDIFF(MICROSECOND, {now}, lease_until) AS remaining_us \
                 FROM {k} WHERE token_key = ? AND expires_at > {now}"
            )),
            renew: s(format!(
                "UPDATE {k} SET lease_until = {now} + INTERVAL ? MICROSECOND \
                 WHERE token_key = ? AND owner = ? AND expires_at > {now}"
            )),
            revoke: s(format!("DELETE FROM {k} WHERE token_key = ?")),
            give_back: s(format!(
                "UPDATE {k} SET owner = NULL, lease_until = NULL \
                 WHERE token_key = ? AND owner = ? AND expires_at > {now}"
            )),
            live: s(format!(
                "SELECT 1 FROM {k} WHERE token_key = ? AND expires_at > {now}"
            )),
            purge: s(format!(
                "DELETE FROM {k} WHERE {expired} ORDER BY expires_at LIMIT {PURGE_BATCH}"
            )),
            probe: (
                k.to_owned(),
                s(format!("SELECT {COLS} FROM {k} WHERE 1 = 0")),
            ),
        }
    }

    fn sqlite(k: &str) -> Self {
        // As for records: the host clock in milliseconds, held as microseconds.
        let now = "CAST(unixepoch('subsec') * 1000000 AS INTEGER)";
        let s = |t: String| Stmt::from(t);
        TokenStatements {
            issue: s(format!(
                "INSERT INTO {k} (token_key, owner, fence, lease_until, expires_at) \
                 VALUES (?1, NULL, 0, NULL, {now} + ?2) \
                 ON CONFLICT (token_key) DO UPDATE SET owner = NULL, lease_until = NULL, \
                   expires_at = excluded.expires_at \
                 WHERE expires_at <= {now}"
            )),
            // One statement that takes SQLite's write lock before it reads the row.
            take: s(format!(
                "UPDATE {k} SET owner = ?2, fence = max(fence + 1, {now}), lease_until = {now} + ?3 \
                 WHERE token_key = ?1 AND expires_at > {now} \
                   AND (owner IS NULL OR (lease_until <= {now} AND owner <> ?2)) \
                 RETURNING fence"
            )),
            read: s(format!(
                "SELECT owner, fence, lease_until - {now} AS remaining_us \
                 FROM {k} WHERE token_key = ?1 AND expires_at > {now}"
            )),
            renew: s(format!(
                "UPDATE {k} SET lease_until = {now} + ?1 \
                 WHERE token_key = ?2 AND owner = ?3 AND expires_at > {now}"
            )),
            revoke: s(format!("DELETE FROM {k} WHERE token_key = ?1")),
            give_back: s(format!(
                "UPDATE {k} SET owner = NULL, lease_until = NULL \
                 WHERE token_key = ?1 AND owner = ?2 AND expires_at > {now}"
            )),
            live: s(format!(
                "SELECT 1 FROM {k} WHERE token_key = ?1 AND expires_at > {now}"
            )),
            purge: s(format!(
                "DELETE FROM {k} WHERE rowid IN (\
                   SELECT rowid FROM {k} WHERE expires_at <= {now} LIMIT {PURGE_BATCH})"
            )),
            probe: (k.to_owned(), s(format!("SELECT {COLS} FROM {k} WHERE 0"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_has_the_token_table_under_its_name() {
        let names = TableNames::new("my_records")
            .unwrap()
            .schema("idem")
            .unwrap();
        let pg = super::super::ddl(Dialect::Postgres, &names);
        assert!(pg.contains("CREATE TABLE IF NOT EXISTS idem.my_records_tokens"));
        let custom = TableNames::default().tokens("form_tokens").unwrap();
        for d in [Dialect::Postgres, Dialect::MySql, Dialect::Sqlite] {
            let text = super::super::ddl(d, &custom);
            assert!(
                text.contains("CREATE TABLE IF NOT EXISTS form_tokens"),
                "{d:?}: {text}"
            );
            assert!(text.contains("form_tokens_expires_idx"), "{d:?}");
        }
        assert!(super::super::ddl(Dialect::MySql, &custom).contains("lease_until DATETIME(6)"));
    }
}
