//! The SQL text of the operators' outbox and consume log reads
//! (`pipeline_ops.rs`), per dialect, and the generic row decoders they share.
//! Times on the database clock at the statement's start; ages in µs.
//!
//! Text columns are read as text: MySQL's binary ones are cast to `utf8mb4`
//! (idem writes them from Rust strings). The key parts of the consume log are
//! cut by the database as the census cuts scenes (`census_sql.rs`): only one
//! row per consumer and message type travels.

use super::Dialect;
use super::mysql_sql::MYSQL_NOW;

/// "now" at the statement's start: never PostgreSQL's `now()`, the start of
/// a transaction that may be long.
fn now(d: Dialect) -> &'static str {
    match d {
        Dialect::Postgres => "statement_timestamp()",
        Dialect::MySql => MYSQL_NOW,
        Dialect::Sqlite => "CAST(unixepoch('subsec') * 1000000 AS INTEGER)",
    }
}

/// µs from the time `expr` to now (`NULL` stays `NULL`).
fn age(d: Dialect, expr: &str) -> String {
    let now = now(d);
    match d {
        Dialect::Postgres => format!("(EXTRACT(EPOCH FROM ({now} - ({expr}))) * 1000000)::INT8"),
        Dialect::MySql => format!("CAST(TIMESTAMPDIFF(MICROSECOND, ({expr}), {now}) AS SIGNED)"),
        Dialect::Sqlite => format!("({now} - ({expr}))"),
    }
}

/// An integer expression as a 64-bit integer column.
fn int(d: Dialect, expr: &str) -> String {
    match d {
        Dialect::Postgres => format!("({expr})::INT8"),
        Dialect::MySql => format!("CAST({expr} AS SIGNED)"),
        Dialect::Sqlite => expr.to_owned(),
    }
}

/// A text column as text (MySQL's are `VARBINARY`).
fn txt(d: Dialect, col: &str) -> String {
    match d {
        Dialect::MySql => format!("CAST({col} AS CHAR CHARACTER SET utf8mb4)"),
        _ => col.to_owned(),
    }
}

/// Rows of `cond` in a group.
fn rows_where(d: Dialect, cond: &str) -> String {
    int(d, &format!("SUM(CASE WHEN {cond} THEN 1 ELSE 0 END)"))
}

fn ph(d: Dialect, sql: &str) -> String {
    crate::sql_kernel::arg::placeholders(d, sql)
}

/// Per namespace and topic of outbox `t`: namespace, topic, pending, parked,
/// sent, oldest pending µs, lag µs (oldest pending and due).
pub(super) fn topics(d: Dialect, t: &str) -> String {
    let n = now(d);
    format!(
        "SELECT {ns}, {topic}, {pending}, {parked}, {sent}, {oldest}, {lag} FROM {t} GROUP BY 1, 2",
        ns = txt(d, "namespace"),
        topic = txt(d, "topic"),
        pending = rows_where(d, "state = 0"),
        parked = rows_where(d, "state = 2"),
        sent = rows_where(d, "state = 1"),
        oldest = age(d, "MIN(CASE WHEN state = 0 THEN created_at END)"),
        lag = age(
            d,
            &format!("MIN(CASE WHEN state = 0 AND due_at <= {n} THEN created_at END)")
        ),
    )
}

/// The whole table's lag µs (one row, `NULL` without a due pending message):
/// through the `(state, seq)` index, pending rows only.
#[cfg(any(feature = "rabbitmq", feature = "nats"))]
pub(super) fn lag(d: Dialect, t: &str) -> String {
    format!(
        "SELECT {} FROM {t} WHERE state = 0 AND due_at <= {}",
        age(d, "MIN(created_at)"),
        now(d)
    )
}

/// Parked messages, oldest first (binds: limit): id, topic, business id,
/// attempts, last error, created (µs since the epoch), age µs.
pub(super) fn parked(d: Dialect, t: &str) -> String {
    let created = match d {
        Dialect::Postgres => "(EXTRACT(EPOCH FROM created_at) * 1000000)::INT8".to_owned(),
        Dialect::MySql => {
            "CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', created_at) AS SIGNED)"
                .to_owned()
        }
        Dialect::Sqlite => "created_at".to_owned(),
    };
    ph(
        d,
        &format!(
            "SELECT {id}, {topic}, {biz}, {attempts}, last_error, {created}, {age} \
             FROM {t} WHERE state = 2 ORDER BY seq LIMIT ?",
            id = txt(d, "id"),
            topic = txt(d, "topic"),
            biz = txt(d, "business_id"),
            attempts = int(d, "attempts"),
            age = age(d, "created_at"),
        ),
    )
}

/// Unparks one message (binds: id): pending, no attempts, due now, no owner.
pub(super) fn unpark(d: Dialect, t: &str) -> String {
    ph(
        d,
        &format!(
            "UPDATE {t} SET state = 0, attempts = 0, due_at = {}, owner = NULL \
             WHERE id = ? AND state = 2",
            now(d)
        ),
    )
}

/// The state of one message (binds: id).
pub(super) fn state_of(d: Dialect, t: &str) -> String {
    ph(
        d,
        &format!("SELECT {} FROM {t} WHERE id = ?", int(d, "state")),
    )
}

/// Per consumer and message type of consume log `t` under a namespace prefix:
/// consumer, type (`NULL` without a business key or when it is hashed),
/// rows, expired rows, oldest µs, newest µs. Binds: PostgreSQL and SQLite
/// the prefix and its length in characters; MySQL the length (bytes) three
/// times, then the prefix.
pub(super) fn consumers(d: Dialect, t: &str) -> String {
    // The keys after the prefix: `consumer:<id>` and `consumer:<type>:<biz>`,
    // or `consumer:%#<hash>` for a key too long to keep readable.
    let inner = match d {
        Dialect::Postgres => format!(
            "SELECT split_part(substr(msg_key, $2::INT4 + 1), ':', 1) AS consumer, \
               split_part(substr(biz_key, $2::INT4 + 1), ':', 2) AS seg, consumed_at, expires_at \
             FROM {t} WHERE left(msg_key, $2::INT4) = $1"
        ),
        Dialect::MySql => format!(
            "SELECT CAST(SUBSTRING_INDEX(SUBSTRING(msg_key, ? + 1), ':', 1) AS CHAR CHARACTER SET utf8mb4) AS consumer, \
               CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(SUBSTRING(biz_key, ? + 1), ':', 2), ':', -1) \
                 AS CHAR CHARACTER SET utf8mb4) AS seg, consumed_at, expires_at \
             FROM {t} WHERE LEFT(msg_key, ?) = ?"
        ),
        Dialect::Sqlite => format!(
            "SELECT substr(r, 1, instr(r || ':', ':') - 1) AS consumer, \
               substr(s, 1, instr(s || ':', ':') - 1) AS seg, consumed_at, expires_at \
             FROM (SELECT substr(msg_key, ?2 + 1) AS r, \
                     substr(substr(biz_key, ?2 + 1), instr(substr(biz_key, ?2 + 1), ':') + 1) AS s, \
                     consumed_at, expires_at \
                   FROM {t} WHERE substr(msg_key, 1, ?2) = ?1)"
        ),
    };
    let hashed = match d {
        Dialect::MySql => "LEFT(seg, 2) = '%#'",
        _ => "substr(seg, 1, 2) = '%#'",
    };
    format!(
        "SELECT consumer, CASE WHEN {hashed} THEN NULL ELSE seg END, {n}, {expired}, \
           {oldest}, {newest} FROM ({inner}) x GROUP BY 1, 2",
        n = int(d, "COUNT(*)"),
        expired = rows_where(d, &format!("expires_at <= {}", now(d))),
        oldest = age(d, "MIN(consumed_at)"),
        newest = age(d, "MAX(consumed_at)"),
    )
}

/// topic, pending, parked, sent, oldest pending µs, lag µs.
pub(super) type TopicRow = (String, String, i64, i64, i64, Option<i64>, Option<i64>);
/// id, topic, business id, attempts, last error, created µs, age µs.
pub(super) type ParkedRow = (String, String, String, i64, Option<String>, i64, i64);
/// consumer, type, rows, expired, oldest µs, newest µs.
pub(super) type ConsumerRow = (String, Option<String>, i64, i64, i64, i64);

/// A decoder generic over the three drivers' row types.
macro_rules! decoder {
    ($(#[$m:meta])* $name:ident -> $T:ty, |$row:ident| $body:expr) => {
        $(#[$m])*
        pub(super) fn $name<R>($row: &R) -> Result<$T, sqlx::Error>
        where
            R: sqlx::Row,
            for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
            for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
            usize: sqlx::ColumnIndex<R>,
        {
            $body
        }
    };
}

decoder!(
    /// A row of [`topics`].
    topic_row -> TopicRow, |r| Ok((
        r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?, r.try_get(4)?,
        r.try_get(5)?, r.try_get(6)?,
    ))
);

decoder!(
    /// A row of [`parked`].
    parked_row -> ParkedRow, |r| Ok((
        r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?,
        r.try_get(4)?, r.try_get(5)?, r.try_get(6)?,
    ))
);

decoder!(
    /// A row of [`consumers`].
    consumer_row -> ConsumerRow, |r| Ok((
        r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?, r.try_get(4)?, r.try_get(5)?,
    ))
);

decoder!(
    /// The one integer of a row ([`state_of`]).
    int_row -> i64, |r| r.try_get(0)
);

decoder!(
    /// The one nullable integer of a row ([`lag`]).
    #[cfg(any(feature = "rabbitmq", feature = "nats"))]
    opt_int_row -> Option<i64>, |r| r.try_get(0)
);
