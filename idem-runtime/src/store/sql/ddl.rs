//! The SQL text of every dialect: the schema (`ddl`) and the statements the
//! stores run. Identifiers come from [`TableNames`], which only admits plain
//! identifiers, so splicing them into the text is safe.

use super::mysql_sql::{MYSQL_NOW, mysql_claim};
use super::stmt::Stmt;
use super::table_set::Shape;
use super::{Dialect, PURGE_BATCH, TableNames};

/// The records' and fences' tables: the start of the first step of
/// [`migrations`](super::migrations).
pub(crate) fn records_statements(d: Dialect, n: &TableNames, shape: Shape) -> Vec<String> {
    let t = n.records(d);
    let f = n.fences_q(d);
    let idx = format!("{}_expires_idx", n.records_name());
    let current = shape == Shape::Current;
    match d {
        Dialect::Postgres => {
            let mut v = Vec::new();
            if let Some(s) = n.schema_name() {
                v.push(format!("CREATE SCHEMA IF NOT EXISTS {s}"));
            }
            v.push(format!("CREATE SEQUENCE IF NOT EXISTS {f} AS BIGINT"));
            v.push(format!(
                "CREATE TABLE IF NOT EXISTS {t} (\n  \
                 idem_key TEXT PRIMARY KEY,\n  \
                 state SMALLINT NOT NULL,\n  \
                 owner BYTEA NOT NULL,\n  \
                 fence BIGINT NOT NULL,\n  \
                 fingerprint BYTEA NOT NULL,\n  \
                 payload BYTEA,\n  \
                 expires_at TIMESTAMPTZ NOT NULL\n)"
            ));
            v.push(format!(
                "CREATE INDEX IF NOT EXISTS {idx} ON {t} (expires_at)"
            ));
            v.extend(current.then(|| state_index(d, n)));
            v
        }
        Dialect::MySql => vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {t} (\n  \
                 idem_key VARBINARY(768) NOT NULL PRIMARY KEY,\n  \
                 state SMALLINT NOT NULL,\n  \
                 owner BINARY(16) NOT NULL,\n  \
                 fence BIGINT NOT NULL,\n  \
                 fingerprint BINARY(16) NOT NULL,\n  \
                 payload LONGBLOB,\n  \
                 expires_at DATETIME(6) NOT NULL,\n  \
                 KEY {idx} (expires_at){state}\n) ENGINE=InnoDB",
                state = match current {
                    true => format!(",\n  KEY {} (state, idem_key)", state_index_name(n)),
                    false => String::new(),
                },
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {f} (\n  \
                 slot SMALLINT NOT NULL PRIMARY KEY,\n  \
                 v BIGINT NOT NULL\n) ENGINE=InnoDB"
            ),
        ],
        Dialect::Sqlite => vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {t} (\n  \
                 idem_key TEXT NOT NULL PRIMARY KEY,\n  \
                 state INTEGER NOT NULL,\n  \
                 owner BLOB NOT NULL,\n  \
                 fence INTEGER NOT NULL,\n  \
                 fingerprint BLOB NOT NULL,\n  \
                 payload BLOB,\n  \
                 expires_at INTEGER NOT NULL\n)"
            ),
            format!("CREATE INDEX IF NOT EXISTS {idx} ON {t} (expires_at)"),
            format!(
                "CREATE TABLE IF NOT EXISTS {f} (\n  \
                 slot INTEGER NOT NULL PRIMARY KEY,\n  \
                 v INTEGER NOT NULL\n)"
            ),
        ]
        .into_iter()
        .chain(current.then(|| state_index(d, n)))
        .collect(),
    }
}

fn state_index_name(n: &TableNames) -> String {
    format!("{}_state_idx", n.records_name())
}

/// The index of the in-progress claims by key (`idem ls --state
/// in-progress`): the third migration step, and part of the current shape.
/// MySQL/MariaDB add it with an `ALTER TABLE`, which fails with 1061 once it
/// is there ("nothing to upgrade").
pub(crate) fn state_index(d: Dialect, n: &TableNames) -> String {
    let (t, i) = (n.records(d), state_index_name(n));
    match d {
        Dialect::MySql => format!("ALTER TABLE {t} ADD KEY {i} (state, idem_key)"),
        _ => format!("CREATE INDEX IF NOT EXISTS {i} ON {t} (state, idem_key)"),
    }
}

/// The statements a store runs, prepared once per store.
#[derive(Debug, Clone)]
pub(crate) struct Statements {
    /// The live (unexpired) row of `$key`: state, owner, fence, fingerprint, payload, remaining µs.
    pub(crate) select_live: Stmt,
    /// Takes `$key` unless it is live (dialect-specific shape, see the stores).
    pub(crate) claim: Stmt,
    /// Hands out the next fence (MySQL, SQLite; unused on PostgreSQL).
    #[cfg_attr(
        not(any(feature = "mysql", feature = "sqlite", feature = "bench")),
        allow(dead_code)
    )]
    pub(crate) next_fence: Stmt,
    /// Owner-checked complete (binds: payload, ttl µs, key, owner); retried by the
    /// same owner it matches again and changes nothing.
    pub(crate) complete: Stmt,
    /// Owner-checked delete of an in-progress claim (binds: key, owner).
    pub(crate) release: Stmt,
    /// Does any row exist for `$key`?
    pub(crate) exists: Stmt,
    /// Owner-checked lease extension (binds: lease µs, key, owner).
    pub(crate) renew: Stmt,
    /// Unconditional delete.
    pub(crate) forget: Stmt,
    /// Deletes up to `PURGE_BATCH` expired rows.
    pub(crate) purge: Stmt,
    /// `verify()` probes: (object name, statement reading it).
    pub(crate) probes: Vec<(String, Stmt)>,
}

const COLS: &str = "state, owner, fence, fingerprint, payload";

impl Statements {
    pub(crate) fn new(d: Dialect, n: &TableNames) -> Self {
        let t = n.records(d);
        let f = n.fences_q(d);
        match d {
            Dialect::Postgres => Self::postgres(&t, &f),
            Dialect::MySql => Self::mysql(&t, &f),
            Dialect::Sqlite => Self::sqlite(&t, &f),
        }
    }

    fn postgres(t: &str, seq: &str) -> Self {
        // The clock is `statement_timestamp()`, never `now()`: `now()` is the
        // start of the transaction, and the transactional guard runs these
        // statements in the caller's transaction, which may have begun before a
        // record expired (it would replay it) or long before its claim (the
        // claim's expiry would start in the past). MySQL's `UTC_TIMESTAMP(6)` and
        // SQLite's `unixepoch('subsec')` are the statement's time already.
        let remaining =
            "(EXTRACT(EPOCH FROM (expires_at - statement_timestamp())) * 1000000)::INT8";
        let plus =
            |p: &str| format!("statement_timestamp() + ({p}::INT8 * INTERVAL '1 microsecond')");
        Statements {
            select_live: Stmt::new(format!(
                "SELECT {COLS}, {remaining} AS remaining_us FROM {t} WHERE idem_key = $1 AND expires_at > statement_timestamp()"
            )),
            // One round trip. `cur` is the live row, if any; only when there is none
            // does `ins` upsert (taking a missing or expired key), so duplicates and
            // waiters stay read-only: no row lock, no transaction id, no WAL flush.
            // `cur` reads the statement's snapshot, which may predate a concurrent
            // insert: then neither branch returns a row and the store asks again.
            claim: Stmt::new(format!(
                "WITH cur AS (\
                   SELECT {COLS}, {remaining} AS remaining_us FROM {t} \
                   WHERE idem_key = $1 AND expires_at > statement_timestamp()), \
                 ins AS (\
                   INSERT INTO {t} AS r (idem_key, state, owner, fence, fingerprint, payload, expires_at) \
                   SELECT $1, 0, $2, nextval('{seq}'), $3, NULL, {exp} WHERE NOT EXISTS (SELECT 1 FROM cur) \
                   ON CONFLICT (idem_key) DO UPDATE SET state = 0, owner = EXCLUDED.owner, \
                     fence = EXCLUDED.fence, fingerprint = EXCLUDED.fingerprint, payload = NULL, \
                     expires_at = EXCLUDED.expires_at \
                   WHERE r.expires_at <= statement_timestamp() \
                   RETURNING r.fence) \
                 SELECT TRUE AS claimed, 0::INT2 AS state, $2::BYTEA AS owner, fence, \
                   $3::BYTEA AS fingerprint, NULL::BYTEA AS payload, 0::INT8 AS remaining_us FROM ins \
                 UNION ALL \
                 SELECT FALSE, {COLS}, remaining_us FROM cur",
                exp = plus("$4"),
            )),
            next_fence: Stmt::new(format!("SELECT nextval('{seq}')")),
            complete: Stmt::new(format!(
                "UPDATE {t} SET payload = CASE WHEN state = 0 THEN $1 ELSE payload END, \
                   expires_at = CASE WHEN state = 0 THEN {exp} ELSE expires_at END, state = 1 \
                 WHERE idem_key = $3 AND owner = $4 AND expires_at > statement_timestamp()",
                exp = plus("$2"),
            )),
            release: Stmt::new(format!(
                "DELETE FROM {t} WHERE idem_key = $1 AND owner = $2 AND state = 0"
            )),
            exists: Stmt::new(format!("SELECT 1 FROM {t} WHERE idem_key = $1")),
            renew: Stmt::new(format!(
                "UPDATE {t} SET expires_at = {exp} \
                 WHERE idem_key = $2 AND owner = $3 AND state = 0 AND expires_at > statement_timestamp()",
                exp = plus("$1"),
            )),
            forget: Stmt::new(format!("DELETE FROM {t} WHERE idem_key = $1")),
            purge: Stmt::new(format!(
                "DELETE FROM {t} WHERE idem_key IN (\
                   SELECT idem_key FROM {t} WHERE expires_at <= statement_timestamp() LIMIT {PURGE_BATCH} \
                   FOR UPDATE SKIP LOCKED) \
                 AND expires_at <= statement_timestamp()"
            )),
            probes: vec![
                (
                    t.to_owned(),
                    Stmt::new(format!(
                        "SELECT idem_key, {COLS}, expires_at FROM {t} WHERE FALSE"
                    )),
                ),
                (
                    seq.to_owned(),
                    Stmt::new(format!("SELECT last_value FROM {seq}")),
                ),
            ],
        }
    }

    fn mysql(t: &str, f: &str) -> Self {
        let now = MYSQL_NOW;
        let now_us = format!("TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {now})");
        let remaining = format!("TIMESTAMPDIFF(MICROSECOND, {now}, expires_at)");
        Statements {
            select_live: Stmt::new(format!(
                "SELECT {COLS}, {remaining} AS remaining_us FROM {t} WHERE idem_key = ? AND expires_at > {now}"
            )),
            // Binds: key, owner, fence, fingerprint, lease µs (see `mysql_claim`).
            claim: Stmt::new(mysql_claim(t, "LAST_INSERT_ID(?)", "VALUES(fence)")),
            next_fence: Stmt::new(format!(
                "INSERT INTO {f} (slot, v) VALUES (?, LAST_INSERT_ID({now_us})) \
                 ON DUPLICATE KEY UPDATE v = LAST_INSERT_ID(GREATEST(v + 1, {now_us}))"
            )),
            // `state` last: MySQL evaluates SET left to right.
            complete: Stmt::new(format!(
                "UPDATE {t} SET payload = IF(state = 0, ?, payload), \
                   expires_at = IF(state = 0, {now} + INTERVAL ? MICROSECOND, expires_at), state = 1 \
                 WHERE idem_key = ? AND owner = ? AND expires_at > {now}"
            )),
            release: Stmt::new(format!(
                "DELETE FROM {t} WHERE idem_key = ? AND owner = ? AND state = 0"
            )),
            exists: Stmt::new(format!("SELECT 1 FROM {t} WHERE idem_key = ?")),
            renew: Stmt::new(format!(
                "UPDATE {t} SET expires_at = {now} + INTERVAL ? MICROSECOND \
                 WHERE idem_key = ? AND owner = ? AND state = 0 AND expires_at > {now}"
            )),
            forget: Stmt::new(format!("DELETE FROM {t} WHERE idem_key = ?")),
            purge: Stmt::new(format!(
                "DELETE FROM {t} WHERE expires_at <= {now} ORDER BY expires_at LIMIT {PURGE_BATCH}"
            )),
            probes: vec![
                (
                    t.to_owned(),
                    Stmt::new(format!(
                        "SELECT idem_key, {COLS}, expires_at FROM {t} WHERE 1 = 0"
                    )),
                ),
                (
                    f.to_owned(),
                    Stmt::new(format!("SELECT slot, v FROM {f} WHERE 1 = 0")),
                ),
            ],
        }
    }

    fn sqlite(t: &str, f: &str) -> Self {
        // The database clock of an embedded database is the host's; `subsec` gives
        // milliseconds, scaled to the microseconds the column holds.
        let now = "CAST(unixepoch('subsec') * 1000000 AS INTEGER)";
        Statements {
            select_live: Stmt::new(format!(
                "SELECT {COLS}, expires_at - {now} AS remaining_us FROM {t} WHERE idem_key = ?1 AND expires_at > {now}"
            )),
            // Binds: key, owner, fence, fingerprint, lease µs. Runs inside BEGIN IMMEDIATE.
            claim: Stmt::new(format!(
                "INSERT INTO {t} (idem_key, state, owner, fence, fingerprint, payload, expires_at) \
                 VALUES (?1, 0, ?2, ?3, ?4, NULL, {now} + ?5) \
                 ON CONFLICT (idem_key) DO UPDATE SET state = 0, owner = excluded.owner, \
                   fence = excluded.fence, fingerprint = excluded.fingerprint, payload = NULL, \
                   expires_at = excluded.expires_at \
                 WHERE expires_at <= {now} \
                 RETURNING fence"
            )),
            next_fence: Stmt::new(format!(
                "INSERT INTO {f} (slot, v) VALUES (0, {now}) \
                 ON CONFLICT (slot) DO UPDATE SET v = max(v + 1, excluded.v) RETURNING v"
            )),
            complete: Stmt::new(format!(
                "UPDATE {t} SET payload = CASE WHEN state = 0 THEN ?1 ELSE payload END, \
                   expires_at = CASE WHEN state = 0 THEN {now} + ?2 ELSE expires_at END, state = 1 \
                 WHERE idem_key = ?3 AND owner = ?4 AND expires_at > {now}"
            )),
            release: Stmt::new(format!(
                "DELETE FROM {t} WHERE idem_key = ?1 AND owner = ?2 AND state = 0"
            )),
            exists: Stmt::new(format!("SELECT 1 FROM {t} WHERE idem_key = ?1")),
            renew: Stmt::new(format!(
                "UPDATE {t} SET expires_at = {now} + ?1 \
                 WHERE idem_key = ?2 AND owner = ?3 AND state = 0 AND expires_at > {now}"
            )),
            forget: Stmt::new(format!("DELETE FROM {t} WHERE idem_key = ?1")),
            purge: Stmt::new(format!(
                "DELETE FROM {t} WHERE rowid IN (\
                   SELECT rowid FROM {t} WHERE expires_at <= {now} LIMIT {PURGE_BATCH})"
            )),
            probes: vec![
                (
                    t.to_owned(),
                    Stmt::new(format!(
                        "SELECT idem_key, {COLS}, expires_at FROM {t} WHERE 0"
                    )),
                ),
                (
                    f.to_owned(),
                    Stmt::new(format!("SELECT slot, v FROM {f} WHERE 0")),
                ),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sql::ddl;

    #[test]
    fn ddl_names_every_object() {
        let names = TableNames::new("my_records")
            .unwrap()
            .schema("idem")
            .unwrap();
        let pg = ddl(Dialect::Postgres, &names);
        assert!(pg.contains("CREATE SCHEMA IF NOT EXISTS idem"));
        assert!(pg.contains("CREATE SEQUENCE IF NOT EXISTS idem.my_records_fences"));
        assert!(pg.contains("CREATE TABLE IF NOT EXISTS idem.my_records"));
        let my = ddl(Dialect::MySql, &names);
        assert!(my.contains("CREATE TABLE IF NOT EXISTS my_records"));
        assert!(my.contains("DATETIME(6)"));
        let lite = ddl(Dialect::Sqlite, &names);
        assert!(lite.contains("CREATE TABLE IF NOT EXISTS my_records_fences"));
    }
}
