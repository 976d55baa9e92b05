//! The SQL text of the operators' outbox reads (`ops.rs`), per dialect, and
//! their row decoders. Times on the database clock at the statement's start;
//! ages in µs.

use crate::sql_kernel::Dialect;
use crate::store::sql::db_now as now;
use crate::store::sql::ops_kit::{age, decoder, int, ph, rows_where, txt};

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

/// topic, pending, parked, sent, oldest pending µs, lag µs.
pub(super) type TopicRow = (String, String, i64, i64, i64, Option<i64>, Option<i64>);
/// id, topic, business id, attempts, last error, created µs, age µs.
pub(super) type ParkedRow = (String, String, String, i64, Option<String>, i64, i64);

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
    /// The one integer of a row ([`state_of`]).
    int_row -> i64, |r| r.try_get(0)
);

decoder!(
    /// The one nullable integer of a row ([`lag`]).
    #[cfg(any(feature = "rabbitmq", feature = "nats"))]
    opt_int_row -> Option<i64>, |r| r.try_get(0)
);
