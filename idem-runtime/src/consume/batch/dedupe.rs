//! The batch's one deduplicating statement, run on the caller's connection
//! by driver: PostgreSQL binds the keys as two arrays (one statement text
//! for every batch size), SQLite as rows; both skip the rows the log already
//! holds and return the message keys they inserted. MySQL has no
//! `RETURNING`: one read finds the rows holding any of the keys and one
//! insert writes the others (see `consume_sql::insert_batch`).

use std::collections::HashSet;

use crate::consume::sql as consume_sql;
use crate::db::{AnyConn, Dialect};

/// One record's keys: message key, business key.
pub(super) type Row<'a> = (&'a str, Option<&'a str>);

/// Inserts the log rows of `rows` (no two sharing a key) that `table` does
/// not hold yet; their message keys.
pub(super) async fn insert(
    conn: AnyConn<'_>,
    table: &str,
    rows: &[Row<'_>],
    retention_us: i64,
) -> Result<HashSet<String>, sqlx::Error> {
    match conn {
        #[cfg(feature = "postgres")]
        AnyConn::Postgres(c) => {
            let sql = consume_sql::insert_batch(Dialect::Postgres, table, rows.len());
            let msgs: Vec<&str> = rows.iter().map(|r| r.0).collect();
            let bizs: Vec<Option<&str>> = rows.iter().map(|r| r.1).collect();
            let fresh: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .bind(msgs)
                .bind(bizs)
                .bind(retention_us)
                .fetch_all(&mut *c)
                .await?;
            Ok(fresh.into_iter().collect())
        }
        #[cfg(feature = "sqlite")]
        AnyConn::Sqlite(c) => {
            let sql = consume_sql::insert_batch(Dialect::Sqlite, table, rows.len());
            let mut q = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(retention_us);
            for (m, b) in rows {
                q = q.bind(*m).bind(*b);
            }
            let fresh: Vec<String> = q.fetch_all(&mut *c).await?;
            Ok(fresh.into_iter().collect())
        }
        #[cfg(feature = "mysql")]
        AnyConn::MySql(c) => mysql(c, table, rows, retention_us).await,
    }
}

/// MySQL/MariaDB: read the rows holding any key, insert the rest. A row a
/// concurrent transaction inserts between the two is a unique violation,
/// for the caller to run the batch again.
#[cfg(feature = "mysql")]
async fn mysql(
    c: &mut sqlx::MySqlConnection,
    table: &str,
    rows: &[Row<'_>],
    retention_us: i64,
) -> Result<HashSet<String>, sqlx::Error> {
    let bizs: Vec<&str> = rows.iter().filter_map(|r| r.1).collect();
    let sql = consume_sql::existing(table, rows.len(), bizs.len());
    let mut q = sqlx::query_as::<_, (Vec<u8>, Option<Vec<u8>>)>(sqlx::AssertSqlSafe(sql));
    for (m, _) in rows {
        q = q.bind(*m);
    }
    for b in &bizs {
        q = q.bind(*b);
    }
    let found = q.fetch_all(&mut *c).await?;
    let (mut taken_msg, mut taken_biz) = (HashSet::new(), HashSet::new());
    for (m, b) in found {
        taken_msg.insert(m);
        if let Some(b) = b {
            taken_biz.insert(b);
        }
    }
    let fresh: Vec<&Row<'_>> = rows
        .iter()
        .filter(|(m, b)| {
            !taken_msg.contains(m.as_bytes())
                && !b.is_some_and(|b| taken_biz.contains(b.as_bytes()))
        })
        .collect();
    if !fresh.is_empty() {
        let sql = consume_sql::insert_batch(Dialect::MySql, table, fresh.len());
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
        for (m, b) in &fresh {
            q = q.bind(*m).bind(*b).bind(retention_us);
        }
        q.execute(&mut *c).await?;
    }
    Ok(fresh.iter().map(|(m, _)| (*m).to_owned()).collect())
}

/// Deletes the row of `msg_key` (a record whose body failed after the batch
/// insert).
pub(super) async fn forget(
    mut conn: AnyConn<'_>,
    dialect: Dialect,
    table: &str,
    msg_key: &str,
) -> Result<(), sqlx::Error> {
    let sql = consume_sql::forget(dialect, table);
    conn.execute(&sql, &[crate::db::Arg::Text(msg_key)])
        .await
        .map(drop)
}
