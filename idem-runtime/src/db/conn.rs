//! The caller's connection, whatever holds it: a `sqlx::Transaction`, a pooled
//! connection, a bare one or a transactional body's [`InTx`](super::InTx)
//! ([`SqlConn`]); and the database it belongs to ([`SqlDb`]): PostgreSQL,
//! MySQL/MariaDB or SQLite, each with its idem feature. Every technique that
//! writes in the caller's transaction (the transactional guard, state
//! transitions, the consume log, the optimistic and pessimistic locks,
//! insert-once) reaches the connection this one way.
//!
//! Generic code over `sqlx::Database` cannot name `execute` on a connection:
//! each database's executor impl is separate. So statements built from `?` and
//! [`Arg`]s run on the connection by driver ([`SqlConn::any`]), and the few
//! that bind a caller's own typed value (a state machine's key) go through
//! [`SqlDb`]'s driver calls, one implementation per database.

use std::future::Future;

use sqlx::{Database, Row as _};

use super::SqlDialect;
use crate::sql_kernel::any_conn::AnyConn;
use crate::sql_kernel::arg::{Arg, bind_args};

/// A database the caller-transaction techniques run on: `sqlx::Postgres`,
/// `sqlx::MySql` (MySQL 8, MariaDB) or `sqlx::Sqlite`. Implemented by idem
/// for each database whose feature is enabled; not meant to be implemented
/// elsewhere. The methods are its driver calls.
pub trait SqlDb: SqlDialect {
    #[doc(hidden)]
    /// The connection by driver, for statements built from [`Arg`]s.
    fn any(conn: &mut Self::Connection) -> AnyConn<'_>;

    #[doc(hidden)]
    /// Binds `args` in order.
    fn bind<'q>(
        q: sqlx::query::Query<'q, Self, Self::Arguments>,
        args: &[Arg<'_>],
    ) -> sqlx::query::Query<'q, Self, Self::Arguments>;

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

    #[doc(hidden)]
    /// The connection by driver, for statements built from [`Arg`]s.
    fn any(&mut self) -> AnyConn<'_> {
        Self::Db::any(self.connection())
    }
}

impl<DB: SqlDb> SqlConn for sqlx::Transaction<'_, DB> {
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
            fn any(conn: &mut $conn) -> AnyConn<'_> {
                AnyConn::from(conn)
            }

            fn bind<'q>(
                q: sqlx::query::Query<'q, $db, <$db as Database>::Arguments>,
                args: &[Arg<'_>],
            ) -> sqlx::query::Query<'q, $db, <$db as Database>::Arguments> {
                bind_args(q, args)
            }

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
