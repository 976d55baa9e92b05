//! What operators read in the consume log: its rows per consumer and
//! message type ([`SqlStore::consume_log_counts`]), for the `idem consume`
//! command. The key parts are cut by the database as the census cuts scenes:
//! only one row per consumer and message type travels. Ages on the database
//! clock.

use std::time::Duration;

use crate::sql_kernel::Dialect;
use crate::store::StoreError;
use crate::store::sql::SqlStore;
use crate::store::sql::bind::Arg;
use crate::store::sql::db_now as now;
use crate::store::sql::ops_kit::{age, age_of, count, decoder, int, rows, rows_where};
use crate::store::sql::stmt::Stmt;

/// Per consumer and message type of consume log `t` under a namespace prefix:
/// consumer, type (`NULL` without a business key or when it is hashed),
/// rows, expired rows, oldest µs, newest µs. Binds: PostgreSQL and SQLite
/// the prefix and its length in characters; MySQL the length (bytes) three
/// times, then the prefix.
fn consumers(d: Dialect, t: &str) -> String {
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

/// consumer, type, rows, expired, oldest µs, newest µs.
type ConsumerRow = (String, Option<String>, i64, i64, i64, i64);

decoder!(
    /// A row of [`consumers`].
    consumer_row -> ConsumerRow, |r| Ok((
        r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?, r.try_get(4)?, r.try_get(5)?,
    ))
);

/// The consume log's rows of one consumer and message type
/// ([`SqlStore::consume_log_counts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConsumerRows {
    /// The consumer (the log keys' scene), as the keys hold it (escaped).
    pub consumer: String,
    /// The message type, as the log's business key holds it (escaped).
    /// `None` for messages consumed without a business id, and for business
    /// keys longer than idem's key limit, which are stored hashed, type
    /// included.
    pub msg_type: Option<String>,
    /// Rows in the log.
    pub rows: u64,
    /// Rows past their retention, which the next purge deletes.
    pub expired: u64,
    /// Age of the oldest row (when its message was consumed).
    pub oldest: Duration,
    /// Age of the newest row.
    pub newest: Duration,
}

impl SqlStore {
    /// The consume log's rows per consumer and message type under
    /// `namespace` (the handle's, as `IdemBuilder::namespace` sets it; empty:
    /// every row, the first part of each key taken as its consumer), sorted.
    pub async fn consume_log_counts(
        &self,
        namespace: &str,
    ) -> Result<Vec<ConsumerRows>, StoreError> {
        let prefix = crate::key::namespace_prefix(namespace);
        let len = match self.dialect {
            Dialect::MySql => prefix.len(),
            _ => prefix.chars().count(),
        } as i64;
        let args: Vec<Arg<'_>> = match self.dialect {
            Dialect::MySql => vec![
                Arg::Int(len),
                Arg::Int(len),
                Arg::Int(len),
                Arg::Text(&prefix),
            ],
            _ => vec![Arg::Text(&prefix), Arg::Int(len)],
        };
        let stmt = Stmt::from(consumers(
            self.dialect,
            &self.names.qualified(super::LOG_KEY, self.dialect),
        ));
        let raw: Vec<ConsumerRow> = rows!(self, &stmt, &args, consumer_row)?;
        let mut out: Vec<ConsumerRows> = raw
            .into_iter()
            .map(|r| ConsumerRows {
                consumer: r.0,
                msg_type: r.1,
                rows: count(r.2),
                expired: count(r.3),
                oldest: age_of(Some(r.4)).unwrap_or_default(),
                newest: age_of(Some(r.5)).unwrap_or_default(),
            })
            .collect();
        out.sort_by(|a, b| (&a.consumer, &a.msg_type).cmp(&(&b.consumer, &b.msg_type)));
        Ok(out)
    }
}
