//! The caller's connection, whatever holds it: a `sqlx::Transaction`, a pooled
//! connection or a bare one ([`StateConn`]); and the few driver calls a
//! transition makes, one implementation per database ([`StateDb`]).

use std::future::Future;

use sqlx::{Database, Row as _};

use crate::db::SqlDialect;

/// A database a state transition runs on: PostgreSQL, MySQL/MariaDB, SQLite
/// (each with its idem feature). The methods are the transition's driver calls.
pub trait StateDb: SqlDialect {
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
    /// Runs a statement without parameters over the simple protocol
    /// (`SAVEPOINT`, which MySQL does not prepare).
    fn simple<'c>(
        conn: &'c mut Self::Connection,
        sql: String,
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send + 'c;
}

/// What a transition runs on: the caller's transaction (the usual case), a
/// pooled connection or a bare one. Without a transaction each statement
/// commits on its own and the body's writes are not atomic with the update.
pub trait StateConn: Send {
    /// The database.
    type Db: StateDb;
    /// The connection to run statements on.
    fn connection(&mut self) -> &mut <Self::Db as Database>::Connection;
}

impl<DB: StateDb> StateConn for sqlx::Transaction<'_, DB>
where
    DB::Connection: Send,
{
    type Db = DB;
    fn connection(&mut self) -> &mut DB::Connection {
        self
    }
}

impl<DB: StateDb> StateConn for sqlx::pool::PoolConnection<DB> {
    type Db = DB;
    fn connection(&mut self) -> &mut DB::Connection {
        self
    }
}

impl<C: StateConn + ?Sized> StateConn for &mut C {
    type Db = C::Db;
    fn connection(&mut self) -> &mut <C::Db as Database>::Connection {
        (**self).connection()
    }
}

macro_rules! state_db {
    ($feature:literal, $db:ty, $conn:ty) => {
        #[cfg(feature = $feature)]
        impl StateDb for $db {
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
        impl StateConn for $conn {
            type Db = $db;
            fn connection(&mut self) -> &mut $conn {
                self
            }
        }
    };
}

state_db!("postgres", sqlx::Postgres, sqlx::PgConnection);
state_db!("mysql", sqlx::MySql, sqlx::MySqlConnection);
state_db!("sqlite", sqlx::Sqlite, sqlx::SqliteConnection);
