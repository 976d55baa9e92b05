//! Helpers for operators' reads over a store's tables: SQL expressions on the
//! database clock at the statement's start (ages in µs), row decoders generic
//! over the three drivers' row types, and the call that fetches every row
//! of a statement. Text columns are read as text: MySQL's binary ones are
//! cast to `utf8mb4` (idem writes them from Rust strings).

use std::time::Duration;

use super::Dialect;
use super::table_set::db_now;

/// µs from the time `expr` to now (`NULL` stays `NULL`).
pub(crate) fn age(d: Dialect, expr: &str) -> String {
    let now = db_now(d);
    match d {
        Dialect::Postgres => format!("(EXTRACT(EPOCH FROM ({now} - ({expr}))) * 1000000)::INT8"),
        Dialect::MySql => format!("CAST(TIMESTAMPDIFF(MICROSECOND, ({expr}), {now}) AS SIGNED)"),
        Dialect::Sqlite => format!("({now} - ({expr}))"),
    }
}

/// An integer expression as a 64-bit integer column.
pub(crate) fn int(d: Dialect, expr: &str) -> String {
    match d {
        Dialect::Postgres => format!("({expr})::INT8"),
        Dialect::MySql => format!("CAST({expr} AS SIGNED)"),
        Dialect::Sqlite => expr.to_owned(),
    }
}

/// A text column as text (MySQL's are `VARBINARY`).
pub(crate) fn txt(d: Dialect, col: &str) -> String {
    match d {
        Dialect::MySql => format!("CAST({col} AS CHAR CHARACTER SET utf8mb4)"),
        _ => col.to_owned(),
    }
}

/// Rows of `cond` in a group.
pub(crate) fn rows_where(d: Dialect, cond: &str) -> String {
    int(d, &format!("SUM(CASE WHEN {cond} THEN 1 ELSE 0 END)"))
}

/// `sql` with `?` placeholders numbered as `d` wants them.
pub(crate) fn ph(d: Dialect, sql: &str) -> String {
    crate::sql_kernel::arg::placeholders(d, sql)
}

/// A column of µs as a duration (`NULL` stays `None`, negative is zero).
pub(crate) fn age_of(us: Option<i64>) -> Option<Duration> {
    us.map(|us| Duration::from_micros(u64::try_from(us).unwrap_or(0)))
}

/// A count column (negative is zero).
pub(crate) fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

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
pub(crate) use decoder;

/// Every row of `$stmt` on `$store`'s pool, each decoded by `$decode` (a
/// generic fn over rows, see [`decoder`]); errors mapped to `StoreError`.
macro_rules! rows {
    ($store:expr, $stmt:expr, $args:expr, $decode:path) => {{
        let r: Result<Vec<_>, sqlx::Error> = $crate::store::sql::pool::on_pool!($store, |p| {
            $crate::store::sql::bind::bind(&$store.sent, $stmt, $args)
                .fetch_all(p)
                .await
                .and_then(|rows| rows.iter().map($decode).collect())
        });
        r.map_err($crate::store::sql::errors::map_err)
    }};
}
pub(crate) use rows;
