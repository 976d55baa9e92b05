//! The caller's connection as one of the drivers idem speaks ([`AnyConn`]), so
//! a statement written once with `?` and an [`Arg`] list runs on whichever
//! database the connection belongs to, without a sqlx executor bound at every
//! call site. Reached through [`SqlConn::any`](super::SqlConn::any) or
//! [`SqlDb::any`](super::SqlDb::any).

use super::Arg;
use super::arg::bind_args;

/// The caller's connection, by driver. Not for users: reach it through
/// [`SqlConn`](crate::db::SqlConn).
#[doc(hidden)]
#[derive(Debug)]
#[non_exhaustive]
pub enum AnyConn<'c> {
    #[cfg(feature = "postgres")]
    #[doc(hidden)]
    Postgres(&'c mut sqlx::PgConnection),
    #[cfg(feature = "mysql")]
    #[doc(hidden)]
    MySql(&'c mut sqlx::MySqlConnection),
    #[cfg(feature = "sqlite")]
    #[doc(hidden)]
    Sqlite(&'c mut sqlx::SqliteConnection),
}

/// Runs `$body` with `$c` bound to the concrete connection of `$conn`
/// (an [`AnyConn`]), once per enabled driver.
macro_rules! on_conn {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            #[cfg(feature = "postgres")]
            $crate::sql_kernel::AnyConn::Postgres($c) => $body,
            #[cfg(feature = "mysql")]
            $crate::sql_kernel::AnyConn::MySql($c) => $body,
            #[cfg(feature = "sqlite")]
            $crate::sql_kernel::AnyConn::Sqlite($c) => $body,
        }
    };
}

impl AnyConn<'_> {
    /// Reborrows for one statement.
    pub(crate) fn re(&mut self) -> AnyConn<'_> {
        on_conn!(self, |c| AnyConn::from(&mut **c))
    }

    /// Runs a statement; the rows it changed.
    pub(crate) async fn execute(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> Result<u64, sqlx::Error> {
        let q = sqlx::AssertSqlSafe(sql);
        on_conn!(self, |c| Ok(bind_args(sqlx::query(q), args)
            .execute(&mut **c)
            .await?
            .rows_affected()))
    }

    /// The first row's integer columns (each read as `i64`, or as `i32`
    /// widened: PostgreSQL does not convert), if there is a row.
    pub(crate) async fn ints(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> Result<Option<Vec<i64>>, sqlx::Error> {
        use sqlx::Row as _;
        let q = sqlx::AssertSqlSafe(sql);
        on_conn!(self, |c| {
            match bind_args(sqlx::query(q), args)
                .fetch_optional(&mut **c)
                .await?
            {
                Some(row) => (0..row.len())
                    .map(|i| {
                        row.try_get::<i64, _>(i)
                            .or_else(|_| row.try_get::<i32, _>(i).map(i64::from))
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some),
                None => Ok(None),
            }
        })
    }

    /// Runs a statement without parameters over the simple protocol
    /// (`SAVEPOINT`, which MySQL does not prepare).
    pub(crate) async fn simple(&mut self, sql: String) -> Result<(), sqlx::Error> {
        let q = sqlx::raw_sql(sqlx::AssertSqlSafe(sql));
        on_conn!(self, |c| q.execute(&mut **c).await.map(drop))
    }
}

/// `From<&mut $conn>` for one driver's connection.
macro_rules! from_conn {
    ($feature:literal, $variant:ident, $conn:ty) => {
        #[cfg(feature = $feature)]
        impl<'c> From<&'c mut $conn> for AnyConn<'c> {
            fn from(c: &'c mut $conn) -> Self {
                AnyConn::$variant(c)
            }
        }
    };
}

from_conn!("postgres", Postgres, sqlx::PgConnection);
from_conn!("mysql", MySql, sqlx::MySqlConnection);
from_conn!("sqlite", Sqlite, sqlx::SqliteConnection);
