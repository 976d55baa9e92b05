//! Keys this transaction claimed, noted in a connection-local temporary
//! table, for the transactional guard's front store (issue 24, a).
//!
//! A transaction sees uncommitted rows only of its own (no dirty reads on
//! PostgreSQL, MySQL/MariaDB's InnoDB or SQLite), so a finished record read
//! from the table is uncommitted exactly when this transaction wrote it. The
//! guard notes every key it claims here, in the caller's transaction: the
//! note rolls back with it (temporary-table rows are transactional on all
//! three; MySQL's `CREATE TEMPORARY TABLE` commits nothing). A record whose
//! key is noted is not copied to the front store.
//!
//! A note that outlives a commit (MySQL, SQLite: the table lives as long as
//! the pooled connection) only makes the front learn less. PostgreSQL clears
//! notes at commit (`ON COMMIT DELETE ROWS`). Notes are one row per key.

use crate::sql_kernel::arg::placeholders;
use crate::sql_kernel::{AnyConn, Arg, Dialect};

/// The temporary table's name (one per connection, whatever the record table).
const TABLE: &str = "idem_tx_marks";

fn create(dialect: Dialect) -> String {
    match dialect {
        Dialect::Postgres => {
            format!(
                "CREATE TEMPORARY TABLE IF NOT EXISTS {TABLE} (k TEXT PRIMARY KEY) ON COMMIT DELETE ROWS"
            )
        }
        Dialect::MySql => format!(
            "CREATE TEMPORARY TABLE IF NOT EXISTS {TABLE} (k VARBINARY({}) PRIMARY KEY) ENGINE=InnoDB",
            crate::store::sql::MAX_KEY_BYTES
        ),
        Dialect::Sqlite => format!("CREATE TEMP TABLE IF NOT EXISTS {TABLE} (k TEXT PRIMARY KEY)"),
    }
}

/// Notes `key` as claimed by the caller's transaction.
pub(crate) async fn mark(
    conn: &mut AnyConn<'_>,
    dialect: Dialect,
    key: &str,
) -> Result<(), sqlx::Error> {
    conn.simple(create(dialect)).await?;
    let insert = match dialect {
        Dialect::Postgres => format!("INSERT INTO {TABLE} (k) VALUES (?) ON CONFLICT DO NOTHING"),
        Dialect::MySql => format!("INSERT IGNORE INTO {TABLE} (k) VALUES (?)"),
        Dialect::Sqlite => format!("INSERT OR IGNORE INTO {TABLE} (k) VALUES (?)"),
    };
    let insert = placeholders(dialect, &insert);
    conn.execute(&insert, &[Arg::Text(key)]).await.map(drop)
}

/// Whether `key` is noted: the caller's transaction claimed it.
pub(crate) async fn marked(
    conn: &mut AnyConn<'_>,
    dialect: Dialect,
    key: &str,
) -> Result<bool, sqlx::Error> {
    conn.simple(create(dialect)).await?;
    let select = placeholders(dialect, &format!("SELECT 1 FROM {TABLE} WHERE k = ?"));
    Ok(conn.ints(&select, &[Arg::Text(key)]).await?.is_some())
}
