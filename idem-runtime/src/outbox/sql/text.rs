//! The SQL text of the transactional outbox (`idem::outbox`): the enqueue the
//! producer runs in its business transaction, and the relay's claim, sent
//! mark, retry, park, stats and purge. Its DDL is in `outbox_ddl.rs`.
//!
//! | column        | PostgreSQL    | MySQL/MariaDB       | SQLite         |
//! |---------------|---------------|---------------------|----------------|
//! | `seq`         | `BIGINT` identity PK | `BIGINT AUTO_INCREMENT` PK | `INTEGER` PK |
//! | `namespace`   | `TEXT`, `''` by default | `VARBINARY(255)` | `TEXT` |
//! | `id`          | `TEXT`, unique (`<table>_id_uk`) | `VARBINARY(64)` | `TEXT` |
//! | `topic`, `business_id` | `TEXT`, unique with the namespace (`<table>_ns_uk`) | `VARBINARY(255)`, `VARBINARY(512)` | `TEXT` |
//! | `order_key`   | `TEXT`, `NULL` unless ordered | `VARBINARY(512)` | `TEXT` |
//! | `payload`     | `BYTEA`       | `LONGBLOB`          | `BLOB`         |
//! | `state`       | 0 pending, 1 sent, 2 parked | `SMALLINT` | `INTEGER` |
//! | `attempts`    | `BIGINT`: failed publishes so far | | |
//! | `owner`       | the relay holding the claim (16 bytes) | `BINARY(16)` | `BLOB` |
//! | `due_at`      | when a relay may claim it next (a claim moves it one lease ahead) | `DATETIME(6)` | `INTEGER` µs |
//! | `created_at`, `sent_at`, `expires_at` | timestamps; `expires_at` is set when sent: `purge_expired` deletes after it | | |
//! | `last_error`  | the last publish failure, as text | | |
//! | `traceparent`, `tracestate` | the W3C trace context of the message's creation, or `NULL` | `VARBINARY(55)`, `VARBINARY(512)` | `TEXT` |
//!
//! Times come from the database clock, as everywhere in idem.

// The relay statements are used with a broker feature only.
#![cfg_attr(not(any(feature = "rabbitmq", feature = "nats")), allow(dead_code))]

use crate::sql_kernel::Dialect;
use crate::store::sql::PURGE_BATCH;

/// The outbox table when none is named: what `migrate()` creates.
pub const DEFAULT_OUTBOX_TABLE: &str = "idem_outbox";

/// Longest outbox table name: its index names (`<name>_expires_idx`) must stay
/// within the 63-byte identifier limit.
const MAX_OUTBOX_TABLE: usize = 51;

/// Checks an outbox table name: a plain identifier (the SQL kernel's check),
/// short enough for the index names derived from it.
pub fn check_outbox_table(name: &str) -> Result<(), String> {
    crate::sql_kernel::check_ident(name).map_err(|e| e.to_string())?;
    if name.len() > MAX_OUTBOX_TABLE {
        return Err(format!(
            "outbox table `{name}` is longer than {MAX_OUTBOX_TABLE} bytes (its index names add up to 12)"
        ));
    }
    Ok(())
}

/// The dialect's "now" and "now plus `?` microseconds".
fn now(d: Dialect) -> &'static str {
    match d {
        Dialect::Postgres => "now()",
        Dialect::MySql => "UTC_TIMESTAMP(6)",
        Dialect::Sqlite => "CAST(unixepoch('subsec') * 1000000 AS INTEGER)",
    }
}

fn plus(d: Dialect) -> String {
    match d {
        Dialect::Postgres => "now() + (?::INT8 * INTERVAL '1 microsecond')".into(),
        Dialect::MySql => "UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND".into(),
        Dialect::Sqlite => format!("({} + ?)", now(d)),
    }
}

/// `?` placeholders as the dialect writes them.
fn ph(d: Dialect, sql: &str) -> String {
    crate::sql_kernel::arg::placeholders(d, sql)
}

/// The PostgreSQL channel an enqueue into table `name` (unqualified)
/// notifies on commit, and its relays listen on.
pub(crate) fn channel(name: &str) -> String {
    format!("idem_{name}")
}

/// The enqueue (binds: namespace, id, topic, business id, order key or
/// `NULL`, payload, traceparent or `NULL`, tracestate or `NULL`). An existing (namespace, topic, business id) is left
/// alone; [`same_payload`] then says whether it holds this payload. On
/// PostgreSQL a new row also notifies the table's [`channel`] (delivered when
/// the transaction commits); its row count is that of the inserted rows.
pub(crate) fn insert(d: Dialect, t: &str, name: &str) -> String {
    let n = now(d);
    let cols = "namespace, id, topic, business_id, order_key, payload, traceparent, tracestate, \
                state, attempts, due_at, created_at";
    let head = format!("INSERT INTO {t} ({cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0, {n}, {n})");
    let conflict = "ON CONFLICT (namespace, topic, business_id) DO NOTHING";
    match d {
        // Not `INSERT IGNORE`: it would turn data errors into warnings.
        Dialect::MySql => format!("{head} ON DUPLICATE KEY UPDATE id = id"),
        Dialect::Postgres => ph(
            d,
            &format!(
                "WITH i AS ({head} {conflict} RETURNING 1) SELECT pg_notify('{}', '') FROM i",
                channel(name)
            ),
        ),
        Dialect::Sqlite => ph(d, &format!("{head} {conflict}")),
    }
}

/// Whether the row of (namespace, topic, business id) holds `payload`
/// (binds: payload, namespace, topic, business id): one integer column, 1 or
/// 0. MySQL reads it locking (the latest committed row, not the
/// transaction's snapshot).
pub(crate) fn same_payload(d: Dialect, t: &str) -> String {
    let lock = if d == Dialect::MySql {
        " LOCK IN SHARE MODE"
    } else {
        ""
    };
    ph(
        d,
        &format!(
            "SELECT CASE WHEN payload = ? THEN 1 ELSE 0 END FROM {t} \
             WHERE namespace = ? AND topic = ? AND business_id = ?{lock}"
        ),
    )
}

/// Serialises the enqueues of one ordered business id until the enqueuing
/// transaction ends, so that a later transaction's message takes a later
/// `seq` only once the earlier one committed or rolled back: `seq` order,
/// commit order and publish order agree. PostgreSQL takes a transaction-scoped
/// advisory lock (binds: its 64-bit key), MySQL/MariaDB locks the business
/// id's row in the lock table (binds: namespace, business id); SQLite
/// writers are serial already (`None`).
pub(crate) fn order_lock(d: Dialect, t: &str) -> Option<String> {
    match d {
        Dialect::Postgres => Some("SELECT 1 FROM (SELECT pg_advisory_xact_lock($1)) l".into()),
        Dialect::MySql => Some(format!(
            "INSERT INTO {} (namespace, order_key) VALUES (?, ?) \
             ON DUPLICATE KEY UPDATE order_key = order_key",
            super::ddl::order_locks(t)
        )),
        Dialect::Sqlite => None,
    }
}

/// The columns a claim returns, in order.
pub(crate) const CLAIM_COLS: &str =
    "seq, id, topic, business_id, payload, attempts, traceparent, tracestate";

/// The due messages a claim may take (binds: limit), oldest first (the
/// `(state, seq)` index: the scan stops after `limit` due rows); a message
/// with an order key only once every earlier pending one of its key was sent
/// or parked.
fn due(d: Dialect, t: &str, lock: &str) -> String {
    let n = now(d);
    format!(
        "SELECT {CLAIM_COLS} FROM {t} c WHERE c.state = 0 AND c.due_at <= {n} \
         AND (c.order_key IS NULL OR NOT EXISTS (\
           SELECT 1 FROM {t} p WHERE p.order_key = c.order_key AND p.namespace = c.namespace \
             AND p.state = 0 AND p.seq < c.seq)) \
         ORDER BY c.seq LIMIT ?{lock}"
    )
}

/// PostgreSQL's and SQLite's claim, one statement (binds: lease µs, owner,
/// limit): moves the taken rows one lease ahead and returns them. PostgreSQL
/// skips rows another relay is claiming this instant (`SKIP LOCKED`); SQLite
/// runs it in `BEGIN IMMEDIATE`.
pub(crate) fn claim(d: Dialect, t: &str) -> String {
    let lock = if d == Dialect::Postgres {
        " FOR UPDATE SKIP LOCKED"
    } else {
        ""
    };
    let inner = due(d, t, lock).replacen(CLAIM_COLS, "c.seq", 1);
    // PostgreSQL plans `seq IN (subquery)` as a hash join over the whole
    // table (sent rows included); `= ANY(ARRAY(...))` looks the claimed
    // rows up by primary key.
    let taken = if d == Dialect::Postgres {
        format!("seq = ANY(ARRAY({inner}))")
    } else {
        format!("seq IN ({inner})")
    };
    ph(
        d,
        &format!(
            "UPDATE {t} SET due_at = {exp}, owner = ? WHERE {taken} RETURNING {CLAIM_COLS}",
            exp = plus(d)
        ),
    )
}

/// MySQL's claim, first half: the due rows, locked, skipping rows other relays
/// hold locked (binds: limit).
#[cfg(any(feature = "mysql", test))]
pub(crate) fn claim_select(t: &str) -> String {
    due(Dialect::MySql, t, " FOR UPDATE SKIP LOCKED")
}

/// MySQL's claim, second half (binds: lease µs, owner): `seqs` are integers
/// the first half returned.
#[cfg(any(feature = "mysql", test))]
pub(crate) fn claim_update(t: &str, seqs: &[i64]) -> String {
    format!(
        "UPDATE {t} SET due_at = {}, owner = ? WHERE seq IN ({})",
        plus(Dialect::MySql),
        join(seqs)
    )
}

fn join(seqs: &[i64]) -> String {
    let v: Vec<String> = seqs.iter().map(i64::to_string).collect();
    v.join(", ")
}

/// Rows whose `seq` is one of `seqs`: on PostgreSQL one array parameter
/// (bound last: one prepared statement for every batch), elsewhere the
/// integers written in (they are integers the claim returned).
fn among(d: Dialect, seqs: &[i64]) -> String {
    if d == Dialect::Postgres {
        "seq = ANY(?)".into()
    } else {
        format!("seq IN ({})", join(seqs))
    }
}

/// Marks `seqs` sent (binds: retention µs, then on PostgreSQL the seqs).
/// Idempotent: a repeat finds them sent already.
pub(crate) fn mark_sent(d: Dialect, t: &str, seqs: &[i64]) -> String {
    let n = now(d);
    ph(
        d,
        &format!(
            "UPDATE {t} SET state = 1, sent_at = {n}, expires_at = {exp}, owner = NULL \
             WHERE state = 0 AND {}",
            among(d, seqs),
            exp = plus(d)
        ),
    )
}

/// A failed publish, owner-checked (binds: attempts, delay µs, error, seq,
/// owner): the message is due again after the delay. Sets, never increments,
/// the attempts, so a repeat after a lost reply changes nothing.
pub(crate) fn retry(d: Dialect, t: &str) -> String {
    ph(
        d,
        &format!(
            "UPDATE {t} SET attempts = ?, due_at = {exp}, last_error = ?, owner = NULL \
             WHERE seq = ? AND owner = ? AND state = 0",
            exp = plus(d)
        ),
    )
}

/// Messages the broker gave no answer about, given back by their owner
/// (binds: delay µs, owner, then on PostgreSQL the seqs): due again after
/// the delay, their attempts unchanged.
pub(crate) fn release(d: Dialect, t: &str, seqs: &[i64]) -> String {
    ph(
        d,
        &format!(
            "UPDATE {t} SET due_at = {exp}, owner = NULL WHERE owner = ? AND state = 0 AND {}",
            among(d, seqs),
            exp = plus(d)
        ),
    )
}

/// The last failed publish of a message: parked (binds: attempts, error,
/// seq, owner). The owner stays on the parked row, so that a repeat after a
/// lost reply finds it again: one row changed means this claim parked it.
pub(crate) fn park(d: Dialect, t: &str) -> String {
    ph(
        d,
        &format!(
            "UPDATE {t} SET state = 2, attempts = ?, last_error = ? \
             WHERE seq = ? AND owner = ? AND state IN (0, 2)"
        ),
    )
}

/// Gives back whatever claim `owner` holds (binds: owner), due at once: the
/// first step of a claim repeated after its reply was lost.
pub(crate) fn release_claim(d: Dialect, t: &str) -> String {
    ph(
        d,
        &format!(
            "UPDATE {t} SET due_at = {n}, owner = NULL WHERE state = 0 AND owner = ?",
            n = now(d)
        ),
    )
}

/// Pending messages, the age of the oldest (µs), parked messages.
pub(crate) fn stats(d: Dialect, t: &str) -> String {
    let age = match d {
        Dialect::Postgres => {
            "(EXTRACT(EPOCH FROM (now() - MIN(created_at))) * 1000000)::INT8".to_owned()
        }
        Dialect::MySql => "TIMESTAMPDIFF(MICROSECOND, MIN(created_at), UTC_TIMESTAMP(6))".into(),
        Dialect::Sqlite => format!("{} - MIN(created_at)", now(d)),
    };
    let int = if d == Dialect::Postgres { "::INT8" } else { "" };
    format!(
        "SELECT (SELECT COUNT(*) FROM {t} WHERE state = 0){int}, \
         COALESCE((SELECT {age} FROM {t} WHERE state = 0), 0){int}, \
         (SELECT COUNT(*) FROM {t} WHERE state = 2){int}"
    )
}

/// Deletes up to `PURGE_BATCH` sent messages past their retention (parked ones
/// stay until an operator deals with them).
pub(crate) fn purge(d: Dialect, t: &str) -> String {
    let n = now(d);
    match d {
        Dialect::Postgres => format!(
            "DELETE FROM {t} WHERE seq IN (\
               SELECT seq FROM {t} WHERE state = 1 AND expires_at <= {n} LIMIT {PURGE_BATCH} \
               FOR UPDATE SKIP LOCKED) \
             AND expires_at <= {n}"
        ),
        Dialect::MySql => format!(
            "DELETE FROM {t} WHERE state = 1 AND expires_at <= {n} ORDER BY expires_at LIMIT {PURGE_BATCH}"
        ),
        Dialect::Sqlite => format!(
            "DELETE FROM {t} WHERE seq IN (\
               SELECT seq FROM {t} WHERE state = 1 AND expires_at <= {n} LIMIT {PURGE_BATCH})"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_name_the_table_and_number_placeholders() {
        let n = crate::store::sql::TableNames::default()
            .outbox("shop_outbox")
            .unwrap();
        let pg = crate::store::sql::ddl(Dialect::Postgres, &n);
        assert!(pg.contains("CREATE TABLE IF NOT EXISTS shop_outbox"));
        assert!(pg.contains("shop_outbox_ns_uk ON shop_outbox (namespace, topic, business_id)"));
        let steps = crate::store::sql::migrations(Dialect::Postgres, &n);
        assert!(
            steps[1]
                .1
                .contains("DROP INDEX IF EXISTS shop_outbox_biz_uk")
        );
        assert!(
            !pg.contains("shop_outbox_biz_uk"),
            "a new database never has the old key"
        );
        let ins = insert(Dialect::Postgres, "o", "o");
        assert!(
            ins.contains("pg_notify('idem_o', '')") && ins.contains("$8"),
            "{ins}"
        );
        assert!(park(Dialect::Sqlite, "o").contains("state IN (0, 2)"));
        let c = claim(Dialect::Postgres, "o");
        assert!(c.contains("FOR UPDATE SKIP LOCKED"), "{c}");
        assert!(c.contains("$1::INT8") && c.contains("owner = $2") && c.contains("LIMIT $3"));
        assert!(!claim(Dialect::Sqlite, "o").contains("SKIP LOCKED"));
        assert!(claim_select("o").ends_with("LIMIT ? FOR UPDATE SKIP LOCKED"));
        assert!(mark_sent(Dialect::MySql, "o", &[3, 4]).contains("seq IN (3, 4)"));
        assert!(mark_sent(Dialect::Postgres, "o", &[3, 4]).ends_with("seq = ANY($2)"));
        assert!(c.contains("seq = ANY(ARRAY(SELECT c.seq"), "{c}");
        assert!(retry(Dialect::Postgres, "o").contains("seq = $4 AND owner = $5"));
        assert!(check_outbox_table("order").is_err());
        assert!(check_outbox_table(&"a".repeat(52)).is_err());
    }
}
