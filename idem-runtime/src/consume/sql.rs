//! The SQL text of the consume log (`#[consume_once]`, `idem::consume`): its
//! DDL (part of [`ddl`](crate::store::sql::ddl) and `migrate()`), the insert the consumer
//! runs in the caller's transaction (one row, or a batched consumer's rows in
//! one statement), and the purge of the store (its table set is in
//! `tables.rs`).
//!
//! | column        | PostgreSQL    | MySQL/MariaDB            | SQLite              |
//! |---------------|---------------|--------------------------|---------------------|
//! | `msg_key`     | `TEXT` PK     | `VARBINARY(768)` PK      | `TEXT` PK           |
//! | `biz_key`     | `TEXT`, unique (`<table>_biz_uk`), `NULL` without a business id | `VARBINARY(768)` | `TEXT` |
//! | `consumed_at` | `TIMESTAMPTZ` | `DATETIME(6)` (UTC)      | `INTEGER` (µs)      |
//! | `expires_at`  | `TIMESTAMPTZ` | `DATETIME(6)` (UTC)      | `INTEGER` (µs since the epoch, ms resolution) |
//!
//! `msg_key` is `ns:consumer:<message id>` and `biz_key` is
//! `ns:consumer:<message type>:<business id>`, both rendered by the key builder
//! (escaped, long ones hashed), so two consumers never block each other and a
//! message of another type about the same order is not a duplicate. Rows live
//! for the log's retention (default 7 days: longer than any redelivery), on
//! the database clock, and `purge_expired` deletes them afterwards.

use crate::sql_kernel::{Dialect, check_ident};
use crate::store::sql::{PURGE_BATCH, TableNames};

/// The consume log table when none is named: what `migrate()` creates.
pub const DEFAULT_LOG_TABLE: &str = "idem_consume_log";

/// Longest log table name: its index names (`<name>_expires_idx`) must stay
/// within the 63-byte identifier limit.
const MAX_LOG_TABLE: usize = 51;

/// Checks a consume log table name: a plain identifier (the SQL kernel's
/// check), short enough for the index names derived from it.
pub fn check_log_table(name: &str) -> Result<(), String> {
    check_ident(name).map_err(|e| e.to_string())?;
    if name.len() > MAX_LOG_TABLE {
        return Err(format!(
            "consume log table `{name}` is longer than {MAX_LOG_TABLE} bytes (its index names add up to 12)"
        ));
    }
    Ok(())
}

/// The consume log's DDL statements for table `t` (qualified), its indexes
/// named after `name` (unqualified).
pub(crate) fn log_ddl(d: Dialect, t: &str, name: &str) -> Vec<String> {
    let uk = format!("{name}_biz_uk");
    let idx = format!("{name}_expires_idx");
    match d {
        Dialect::Postgres => vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {t} (\n  \
                 msg_key TEXT PRIMARY KEY,\n  \
                 biz_key TEXT,\n  \
                 consumed_at TIMESTAMPTZ NOT NULL,\n  \
                 expires_at TIMESTAMPTZ NOT NULL\n)"
            ),
            format!("CREATE UNIQUE INDEX IF NOT EXISTS {uk} ON {t} (biz_key)"),
            format!("CREATE INDEX IF NOT EXISTS {idx} ON {t} (expires_at)"),
        ],
        Dialect::MySql => vec![format!(
            "CREATE TABLE IF NOT EXISTS {t} (\n  \
             msg_key VARBINARY(768) NOT NULL PRIMARY KEY,\n  \
             biz_key VARBINARY(768) NULL,\n  \
             consumed_at DATETIME(6) NOT NULL,\n  \
             expires_at DATETIME(6) NOT NULL,\n  \
             UNIQUE KEY {uk} (biz_key),\n  \
             KEY {idx} (expires_at)\n) ENGINE=InnoDB"
        )],
        Dialect::Sqlite => vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {t} (\n  \
                 msg_key TEXT NOT NULL PRIMARY KEY,\n  \
                 biz_key TEXT,\n  \
                 consumed_at INTEGER NOT NULL,\n  \
                 expires_at INTEGER NOT NULL\n)"
            ),
            format!("CREATE UNIQUE INDEX IF NOT EXISTS {uk} ON {t} (biz_key)"),
            format!("CREATE INDEX IF NOT EXISTS {idx} ON {t} (expires_at)"),
        ],
    }
}

/// The store's consume log DDL, appended to the records' by `ddl()`.
pub(crate) fn statements(d: Dialect, n: &TableNames) -> Vec<String> {
    log_ddl(d, &n.consume_log_q(d), n.consume_log_name())
}

/// The row insert of one consumed message (binds: msg_key, biz_key or `NULL`,
/// retention µs). A unique violation on either key is the duplicate.
pub(crate) fn insert(d: Dialect, t: &str) -> String {
    match d {
        Dialect::Postgres => format!(
            "INSERT INTO {t} (msg_key, biz_key, consumed_at, expires_at) \
             VALUES ($1, $2, statement_timestamp(), statement_timestamp() + ($3::INT8 * INTERVAL '1 microsecond'))"
        ),
        Dialect::MySql => format!(
            "INSERT INTO {t} (msg_key, biz_key, consumed_at, expires_at) \
             VALUES (?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)"
        ),
        Dialect::Sqlite => {
            let now = "CAST(unixepoch('subsec') * 1000000 AS INTEGER)";
            format!(
                "INSERT INTO {t} (msg_key, biz_key, consumed_at, expires_at) \
                 VALUES (?1, ?2, {now}, {now} + ?3)"
            )
        }
    }
}

/// The batch insert of a batched consumer's new rows, `n` of them (binds as
/// below); rows whose message key or business key the log already holds are
/// skipped and the statement names the inserted message keys:
///
/// - PostgreSQL: `$1` message keys, `$2` business keys (arrays), `$3`
///   retention µs; `ON CONFLICT DO NOTHING … RETURNING`, one text for any `n`;
/// - SQLite: per row its message key and business key, then the retention;
///   `ON CONFLICT DO NOTHING … RETURNING`;
/// - MySQL/MariaDB (no `RETURNING` on MySQL): per row its message key,
///   business key and retention; a plain insert of the rows that
///   [`existing`] did not find, so a row that a concurrent transaction
///   inserted in between is a unique violation (the batch runs again).
#[cfg_attr(not(any(feature = "rabbitmq", feature = "nats")), allow(dead_code))]
pub(crate) fn insert_batch(d: Dialect, t: &str, n: usize) -> String {
    let cols = "msg_key, biz_key, consumed_at, expires_at";
    match d {
        Dialect::Postgres => format!(
            "INSERT INTO {t} ({cols}) \
             SELECT m, b, statement_timestamp(), statement_timestamp() + ($3::INT8 * INTERVAL '1 microsecond') \
             FROM unnest($1::TEXT[], $2::TEXT[]) AS u(m, b) \
             ON CONFLICT DO NOTHING RETURNING msg_key"
        ),
        Dialect::MySql => {
            let row = "(?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)";
            format!(
                "INSERT INTO {t} ({cols}) VALUES {}",
                vec![row; n].join(", ")
            )
        }
        Dialect::Sqlite => {
            let now = "CAST(unixepoch('subsec') * 1000000 AS INTEGER)";
            let rows: Vec<String> = (0..n)
                .map(|i| format!("(?{}, ?{}, {now}, {now} + ?1)", 2 * i + 2, 2 * i + 3))
                .collect();
            format!(
                "INSERT INTO {t} ({cols}) VALUES {} ON CONFLICT DO NOTHING RETURNING msg_key",
                rows.join(", ")
            )
        }
    }
}

/// MySQL/MariaDB: the rows holding any of `msgs` message keys or `bizs`
/// business keys (binds: the message keys, then the business keys), each
/// half on its own index.
#[cfg(feature = "mysql")]
#[cfg_attr(not(any(feature = "rabbitmq", feature = "nats")), allow(dead_code))]
pub(crate) fn existing(t: &str, msgs: usize, bizs: usize) -> String {
    let list = |n: usize| vec!["?"; n].join(", ");
    let mut sql = format!(
        "SELECT msg_key, biz_key FROM {t} WHERE msg_key IN ({})",
        list(msgs)
    );
    if bizs > 0 {
        sql.push_str(&format!(
            " UNION ALL SELECT msg_key, biz_key FROM {t} WHERE biz_key IN ({})",
            list(bizs)
        ));
    }
    sql
}

/// Deletes one message's row: a batch's record whose body failed after the
/// batch insert wrote its row (bind: msg_key).
#[cfg_attr(not(any(feature = "rabbitmq", feature = "nats")), allow(dead_code))]
pub(crate) fn forget(d: Dialect, t: &str) -> String {
    let p = match d {
        Dialect::Postgres => "$1",
        Dialect::MySql => "?",
        Dialect::Sqlite => "?1",
    };
    format!("DELETE FROM {t} WHERE msg_key = {p}")
}

/// Whether the log holds a row for a message key: a violation that names the
/// business id may also be a redelivered message id (both keys taken; SQLite
/// then names the business id's index), which this tells apart.
pub(crate) fn seen(d: Dialect, t: &str) -> String {
    let p = match d {
        Dialect::Postgres => "$1",
        Dialect::MySql => "?",
        Dialect::Sqlite => "?1",
    };
    format!("SELECT 1 FROM {t} WHERE msg_key = {p}")
}

/// Deletes up to `PURGE_BATCH` expired log rows.
pub(crate) fn purge(d: Dialect, t: &str) -> String {
    match d {
        Dialect::Postgres => format!(
            "DELETE FROM {t} WHERE msg_key IN (\
               SELECT msg_key FROM {t} WHERE expires_at <= statement_timestamp() LIMIT {PURGE_BATCH} \
               FOR UPDATE SKIP LOCKED) \
             AND expires_at <= statement_timestamp()"
        ),
        Dialect::MySql => format!(
            "DELETE FROM {t} WHERE expires_at <= UTC_TIMESTAMP(6) ORDER BY expires_at LIMIT {PURGE_BATCH}"
        ),
        Dialect::Sqlite => format!(
            "DELETE FROM {t} WHERE rowid IN (\
               SELECT rowid FROM {t} WHERE expires_at <= CAST(unixepoch('subsec') * 1000000 AS INTEGER) \
               LIMIT {PURGE_BATCH})"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_name_the_table_and_its_indexes() {
        let n = TableNames::default().consume_log("refund_log").unwrap();
        let pg = statements(Dialect::Postgres, &n).join(";\n");
        assert!(pg.contains("CREATE TABLE IF NOT EXISTS refund_log"));
        assert!(pg.contains(
            "CREATE UNIQUE INDEX IF NOT EXISTS refund_log_biz_uk ON refund_log (biz_key)"
        ));
        let my = statements(Dialect::MySql, &n).join(";\n");
        assert!(my.contains("UNIQUE KEY refund_log_biz_uk (biz_key)"));
        assert!(insert(Dialect::Sqlite, "refund_log").contains("?3"));
        let lite = insert_batch(Dialect::Sqlite, "refund_log", 2);
        assert!(lite.contains("(?4, ?5, "), "{lite}");
        assert_eq!(insert_batch(Dialect::MySql, "l", 3).matches('?').count(), 9);
        #[cfg(feature = "mysql")]
        {
            assert!(existing("l", 2, 0).ends_with("msg_key IN (?, ?)"));
            assert!(existing("l", 1, 1).contains("UNION ALL"));
        }
    }
}
