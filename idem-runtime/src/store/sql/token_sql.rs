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
//! is *issued* when `owner` is `NULL`, else *spent* by that owner's take (the
//! tombstone a retried take of the same owner recognises); its `expires_at` is
//! set by `issue` and kept through the whole cycle. A spent row's
//! `lease_until` is its `expires_at`: the column held a consuming lease in
//! earlier versions of idem, which read such a row as held by another owner
//! until it expires (so a process not yet upgraded refuses a token this one
//! spent, as busy). Every time is the database clock's, as for records. A
//! take's fence is `nextval` of the records' fence sequence (PostgreSQL) or
//! `max(fence + 1, now µs)` of the row (MySQL, SQLite): larger than every
//! earlier take's of this token either way.

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
/// per statement.
#[derive(Debug, Clone)]
pub(crate) struct TokenStatements {
    /// Inserts an issued row, or replaces an expired one (binds: key, ttl µs).
    pub(crate) issue: Stmt,
    /// issued → spent by the caller, or the caller's own spent row again (a
    /// retried take): one statement that touches a row exactly when the
    /// take is (or was already) the caller's. PostgreSQL and SQLite (binds:
    /// key, owner): `UPDATE … RETURNING fence`. MySQL (binds: owner, key,
    /// owner): an `UPDATE` whose `LAST_INSERT_ID` is the fence.
    pub(crate) take: Stmt,
    /// Owner-checked spent → issued of a live token (binds: key, owner).
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
            // The right-hand sides read the row as it was: a fresh take draws
            // a fence (`CASE` evaluates `nextval` only on that branch), a
            // retried one keeps its own. A concurrent take that committed
            // first is re-checked by the row lock and leaves no row here.
            take: s(format!(
                "UPDATE {k} SET \
                   fence = CASE WHEN owner IS NULL THEN nextval('{seq}') ELSE fence END, \
                   owner = $2, lease_until = expires_at \
                 WHERE token_key = $1 AND expires_at > statement_timestamp() \
                   AND (owner IS NULL OR owner = $2) \
                 RETURNING fence"
            )),
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
            // MySQL assigns left to right, so `fence` reads the owner before
            // the take writes it. Rows matched (the driver sets
            // CLIENT_FOUND_ROWS, so a retried take that changes nothing
            // counts) is 1 exactly when the take is the caller's;
            // `LAST_INSERT_ID(x)` puts the fence in the OK packet, so the take
            // needs no `RETURNING` and no second statement.
            take: s(format!(
                "UPDATE {k} SET \
                   fence = LAST_INSERT_ID(IF(owner IS NULL, GREATEST(fence + 1, {now_us}), fence)), \
                   owner = ?, lease_until = expires_at \
                 WHERE token_key = ? AND expires_at > {now} AND (owner IS NULL OR owner = ?)"
            )),
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
            // The right-hand sides read the row as it was (a fresh take draws
            // a fence, a retried one keeps its own); run in the store's writer turn.
            take: s(format!(
                "UPDATE {k} SET \
                   fence = CASE WHEN owner IS NULL THEN max(fence + 1, {now}) ELSE fence END, \
                   owner = ?2, lease_until = expires_at \
                 WHERE token_key = ?1 AND expires_at > {now} AND (owner IS NULL OR owner = ?2) \
                 RETURNING fence"
            )),
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
