//! [`SqlConstraints`]: finds unique constraints and indexes by name in the
//! business database, for `Idem::verify()` and for SQLite, whose unique-violation
//! messages name columns, not the index.

use crate::sql_kernel::AnyConn;
use crate::store::catalog::{ConstraintCatalog, ConstraintDef, Engine};
use crate::store::sql::errors::map_err;
use crate::store::sql::pool::Pool;
use crate::store::{BoxFuture, StoreError};

/// How a catalog lists an index member that is an expression, not a column.
pub const EXPRESSION: &str = "(expression)";

/// A [`ConstraintCatalog`] over a business database pool.
///
/// - PostgreSQL: unique constraints and unique indexes (a constraint's index has
///   its name), preferring tables on the `search_path`.
/// - MySQL/MariaDB: unique indexes (`NON_UNIQUE = 0`) of the current database.
///   Index names are per table there: if two tables use the same name, the first
///   by table name is reported.
/// - SQLite: `CREATE UNIQUE INDEX` indexes. A `UNIQUE` clause inside
///   `CREATE TABLE` gets an `sqlite_autoindex_…` name, so declare backstops on
///   SQLite as named unique indexes.
///
/// ```no_run
/// # async fn f(pool: sqlx::PgPool) -> Result<(), idem::Error> {
/// use idem::{Idem, sql::{SqlConstraints, SqlStore}};
/// let idem = Idem::builder()
///     .store(SqlStore::postgres(pool.clone()))
///     .constraints(SqlConstraints::postgres(pool))
///     .build()?;
/// idem.verify(&["uk_order_no"]).await?; // a missing index is an error naming it
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SqlConstraints {
    pool: Pool,
}

impl SqlConstraints {
    /// Catalog of a PostgreSQL database.
    #[cfg(feature = "postgres")]
    pub fn postgres(pool: sqlx::PgPool) -> Self {
        SqlConstraints {
            pool: Pool::Postgres(pool),
        }
    }

    /// Catalog of a MySQL/MariaDB database.
    #[cfg(feature = "mysql")]
    pub fn mysql(pool: sqlx::MySqlPool) -> Self {
        SqlConstraints {
            pool: Pool::MySql(pool),
        }
    }

    /// Catalog of a SQLite database.
    #[cfg(feature = "sqlite")]
    pub fn sqlite(pool: sqlx::SqlitePool) -> Self {
        SqlConstraints {
            pool: Pool::Sqlite(crate::store::sql::pool::Lite::new(pool)),
        }
    }

    async fn lookup(&self, name: &str) -> Result<Option<ConstraintDef>, sqlx::Error> {
        let rows: Rows = match &self.pool {
            #[cfg(feature = "postgres")]
            Pool::Postgres(p) => sqlx::query_as(PG_LOOKUP).bind(name).fetch_all(p).await?,
            #[cfg(feature = "mysql")]
            Pool::MySql(p) => {
                sqlx::query_as(MYSQL_LOOKUP)
                    .bind(name)
                    .bind(name)
                    .fetch_all(p)
                    .await?
            }
            #[cfg(feature = "sqlite")]
            Pool::Sqlite(lite) => {
                sqlx::query_as(SQLITE_LOOKUP)
                    .bind(name)
                    .fetch_all(&lite.pool)
                    .await?
            }
        };
        Ok(definition(rows))
    }
}

/// The unique constraint or index called `name`, looked up on `conn` itself
/// (the same statements as [`SqlConstraints`]): insert-once resolves
/// SQLite's unnamed violations on the caller's own connection, because a
/// second pooled connection may be unavailable while the caller's
/// transaction holds the write lock (and the pool's other connections wait
/// for it).
pub(crate) async fn lookup_on(
    conn: AnyConn<'_>,
    name: &str,
) -> Result<Option<ConstraintDef>, sqlx::Error> {
    let rows: Rows = match conn {
        #[cfg(feature = "postgres")]
        AnyConn::Postgres(c) => sqlx::query_as(PG_LOOKUP).bind(name).fetch_all(c).await?,
        #[cfg(feature = "mysql")]
        AnyConn::MySql(c) => {
            sqlx::query_as(MYSQL_LOOKUP)
                .bind(name)
                .bind(name)
                .fetch_all(c)
                .await?
        }
        #[cfg(feature = "sqlite")]
        AnyConn::Sqlite(c) => {
            sqlx::query_as(SQLITE_LOOKUP)
                .bind(name)
                .fetch_all(c)
                .await?
        }
    };
    Ok(definition(rows))
}

/// (table, column) rows in index order; an expression in the index has no
/// column name.
type Rows = Vec<(String, Option<String>)>;

#[cfg(feature = "postgres")]
const PG_LOOKUP: &str = "SELECT c.relname::TEXT, a.attname::TEXT \
     FROM pg_index i \
     JOIN pg_class ic ON ic.oid = i.indexrelid \
     JOIN pg_class c ON c.oid = i.indrelid \
     JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON TRUE \
     LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum \
     WHERE i.indisunique AND ic.relname = $1 AND ic.oid = ( \
       SELECT ic2.oid FROM pg_class ic2 JOIN pg_index i2 ON i2.indexrelid = ic2.oid \
       WHERE ic2.relname = $1 AND i2.indisunique \
       ORDER BY pg_table_is_visible(i2.indrelid) DESC, ic2.oid LIMIT 1) \
     ORDER BY k.ord";

#[cfg(feature = "mysql")]
const MYSQL_LOOKUP: &str = "SELECT CAST(s.TABLE_NAME AS CHAR), CAST(s.COLUMN_NAME AS CHAR) \
     FROM information_schema.STATISTICS s \
     WHERE s.TABLE_SCHEMA = DATABASE() AND s.INDEX_NAME = ? AND s.NON_UNIQUE = 0 \
     AND s.TABLE_NAME = ( \
       SELECT MIN(s2.TABLE_NAME) FROM information_schema.STATISTICS s2 \
       WHERE s2.TABLE_SCHEMA = DATABASE() AND s2.INDEX_NAME = ? AND s2.NON_UNIQUE = 0) \
     ORDER BY s.SEQ_IN_INDEX";

#[cfg(feature = "sqlite")]
const SQLITE_LOOKUP: &str = "SELECT m.tbl_name, ii.name \
     FROM sqlite_master m \
     JOIN pragma_index_list(m.tbl_name) il ON il.name = m.name \
     JOIN pragma_index_info(m.name) ii \
     WHERE m.type = 'index' AND m.name = ?1 AND il.\"unique\" = 1 \
     ORDER BY ii.seqno";

/// The definition the lookup rows describe, if any.
fn definition(rows: Rows) -> Option<ConstraintDef> {
    let (table, _) = rows.first()?;
    Some(ConstraintDef {
        table: table.clone(),
        columns: rows
            .iter()
            .map(|(_, c)| c.clone().unwrap_or_else(|| EXPRESSION.to_owned()))
            .collect(),
    })
}

impl SqlConstraints {
    /// Every unique index name the lookup above can find (PostgreSQL: in
    /// every schema, as the lookup, system schemas left out).
    async fn names(&self) -> Result<Vec<String>, sqlx::Error> {
        match &self.pool {
            #[cfg(feature = "postgres")]
            Pool::Postgres(p) => {
                sqlx::query_scalar(
                    "SELECT DISTINCT ic.relname::TEXT FROM pg_index i \
                     JOIN pg_class ic ON ic.oid = i.indexrelid \
                     JOIN pg_namespace n ON n.oid = ic.relnamespace \
                     WHERE i.indisunique \
                     AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
                     AND n.nspname NOT LIKE 'pg\\_toast%'",
                )
                .fetch_all(p)
                .await
            }
            #[cfg(feature = "mysql")]
            Pool::MySql(p) => {
                sqlx::query_scalar(
                    "SELECT DISTINCT CAST(INDEX_NAME AS CHAR) FROM information_schema.STATISTICS \
                     WHERE TABLE_SCHEMA = DATABASE() AND NON_UNIQUE = 0",
                )
                .fetch_all(p)
                .await
            }
            #[cfg(feature = "sqlite")]
            Pool::Sqlite(lite) => {
                sqlx::query_scalar(
                    "SELECT m.name FROM sqlite_master m \
                     JOIN pragma_index_list(m.tbl_name) il ON il.name = m.name \
                     WHERE m.type = 'index' AND il.\"unique\" = 1",
                )
                .fetch_all(&lite.pool)
                .await
            }
        }
    }
}

impl ConstraintCatalog for SqlConstraints {
    fn unique_names(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(async move { self.names().await.map_err(map_err) })
    }

    fn unique_constraint<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ConstraintDef>, StoreError>> {
        Box::pin(async move { self.lookup(name).await.map_err(map_err) })
    }

    fn engine(&self) -> Option<Engine> {
        Some(match self.pool.dialect() {
            crate::sql_kernel::Dialect::Postgres => Engine::Postgres,
            crate::sql_kernel::Dialect::MySql => Engine::MySql,
            crate::sql_kernel::Dialect::Sqlite => Engine::Sqlite,
        })
    }
}
