//! The caller's connection, whatever holds it: a `sqlx::Transaction`, a pooled
//! connection or a bare one ([`SqlConn`]); and the few driver calls the
//! techniques that write in the caller's transaction make (state transitions,
//! the consume log), one implementation per database ([`SqlDb`]). Generic
//! code over `sqlx::Database` cannot name `execute` on a connection without
//! these: each database's executor impl is separate.

use std::future::Future;

use sqlx::{Database, Row as _};

use super::SqlDialect;

/// A database the caller-transaction techniques run on: PostgreSQL,
/// MySQL/MariaDB, SQLite (each with its idem feature). The methods are their
/// driver calls.
pub trait SqlDb: SqlDialect {
    #[doc(hidden)]
    /// Runs a statement; the number of rows it changed.
    fn exec<'c>(
        conn: &'c mut Self::Connection,
        q: sqlx::query::Query<'c, Self, Self::Arguments>,
    ) -> impl Future<Output = Result<u64, sqlx::Error>> + Send + 'c;

    #[doc(hidden)]
    /// Reads the first column of the first row as text.
    fn text<'c>(
        conn: &'c mut Self::Connection,
        q: sqlx::query::Query<'c, Self, Self::Arguments>,
    ) -> impl Future<Output = Result<Option<String>, sqlx::Error>> + Send + 'c;

    #[doc(hidden)]
    /// Binds a state's stored value.
    fn bind_state<'c>(
        q: sqlx::query::Query<'c, Self, Self::Arguments>,
        value: &'static str,
    ) -> sqlx::query::Query<'c, Self, Self::Arguments>;

    #[doc(hidden)]
    /// Binds an optional text value.
    fn bind_text<'c>(
        q: sqlx::query::Query<'c, Self, Self::Arguments>,
        value: Option<String>,
    ) -> sqlx::query::Query<'c, Self, Self::Arguments>;

    #[doc(hidden)]
    /// Binds an integer.
    fn bind_i64<'c>(
        q: sqlx::query::Query<'c, Self, Self::Arguments>,
        value: i64,
    ) -> sqlx::query::Query<'c, Self, Self::Arguments>;

    #[doc(hidden)]
    /// Runs a statement without parameters over the simple protocol
    /// (`SAVEPOINT`, which MySQL does not prepare).
    fn simple<'c>(
        conn: &'c mut Self::Connection,
        sql: String,
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send + 'c;
}

/// What a caller-transaction technique runs on: the caller's transaction (the
/// usual case), a pooled connection or a bare one. Without a transaction each
/// statement commits on its own and the body's writes are not atomic with the
/// technique's own statement.
pub trait SqlConn: Send {
    /// The database.
    type Db: SqlDb;
    /// The connection to run statements on.
    fn connection(&mut self) -> &mut <Self::Db as Database>::Connection;
}

impl<DB: SqlDb> SqlConn for sqlx::Transaction<'_, DB>
where
    DB::Connection: Send,
{
    type Db = DB;
    fn connection(&mut self) -> &mut DB::Connection {
        self
    }
}

impl<DB: SqlDb> SqlConn for sqlx::pool::PoolConnection<DB> {
    type Db = DB;
    fn connection(&mut self) -> &mut DB::Connection {
        self
    }
}

impl<C: SqlConn + ?Sized> SqlConn for &mut C {
    type Db = C::Db;
    fn connection(&mut self) -> &mut <C::Db as Database>::Connection {
        (**self).connection()
    }
}

macro_rules! sql_db {
    ($feature:literal, $db:ty, $conn:ty) => {
        #[cfg(feature = $feature)]
        impl SqlDb for $db {
            fn exec<'c>(
                conn: &'c mut $conn,
                q: sqlx::query::Query<'c, $db, <$db as Database>::Arguments>,
            ) -> impl Future<Output = Result<u64, sqlx::Error>> + Send + 'c {
                async move { q.execute(conn).await.map(|r| r.rows_affected()) }
            }

            fn text<'c>(
                conn: &'c mut $conn,
                q: sqlx::query::Query<'c, $db, <$db as Database>::Arguments>,
            ) -> impl Future<Output = Result<Option<String>, sqlx::Error>> + Send + 'c {
                async move {
                    match q.fetch_optional(conn).await? {
                        Some(row) => row.try_get::<String, _>(0).map(Some),
                        None => Ok(None),
                    }
                }
            }

            fn bind_state<'c>(
                q: sqlx::query::Query<'c, $db, <$db as Database>::Arguments>,
                value: &'static str,
            ) -> sqlx::query::Query<'c, $db, <$db as Database>::Arguments> {
                q.bind(value)
            }

            fn bind_text<'c>(
                q: sqlx::query::Query<'c, $db, <$db as Database>::Arguments>,
                value: Option<String>,
            ) -> sqlx::query::Query<'c, $db, <$db as Database>::Arguments> {
                q.bind(value)
            }

            fn bind_i64<'c>(
                q: sqlx::query::Query<'c, $db, <$db as Database>::Arguments>,
                value: i64,
            ) -> sqlx::query::Query<'c, $db, <$db as Database>::Arguments> {
                q.bind(value)
            }

            fn simple<'c>(
                conn: &'c mut $conn,
                sql: String,
            ) -> impl Future<Output = Result<(), sqlx::Error>> + Send + 'c {
                async move {
                    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                        .execute(conn)
                        .await
                        .map(drop)
                }
            }
        }

        #[cfg(feature = $feature)]
        impl SqlConn for $conn {
            type Db = $db;
            fn connection(&mut self) -> &mut $conn {
                self
            }
        }
    };
}

sql_db!("postgres", sqlx::Postgres, sqlx::PgConnection);
sql_db!("mysql", sqlx::MySql, sqlx::MySqlConnection);
sql_db!("sqlite", sqlx::Sqlite, sqlx::SqliteConnection);
