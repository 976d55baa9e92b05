//! The caller's connection as one of the drivers idem speaks ([`AnyConn`]),
//! so the in-transaction techniques (the transactional guard, the optimistic
//! and pessimistic locks, insert-once) write each statement once and run it on
//! whichever database the caller's `sqlx::Transaction` belongs to, without a
//! sqlx executor bound at every call site. [`TxDb`] is the bound their public
//! functions take: `sqlx::Postgres`, `sqlx::MySql` or `sqlx::Sqlite`, each with
//! its idem feature.

use super::SqlDialect;

/// One bind parameter of a statement the SQL pieces build (text, bytes or an
/// integer: everything idem binds).
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    /// A text value.
    Text(&'a str),
    /// A byte string.
    Bytes(&'a [u8]),
    /// An integer.
    Int(i64),
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(s: &'a str) -> Self {
        Arg::Text(s)
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(s: &'a String) -> Self {
        Arg::Text(s)
    }
}

impl From<i64> for Arg<'_> {
    fn from(i: i64) -> Self {
        Arg::Int(i)
    }
}

impl From<i32> for Arg<'_> {
    fn from(i: i32) -> Self {
        Arg::Int(i64::from(i))
    }
}

/// Binds `args` in order to a query of any of the three drivers.
pub(crate) fn bind_args<'q, DB: sqlx::Database>(
    mut q: sqlx::query::Query<'q, DB, DB::Arguments>,
    args: &[Arg<'_>],
) -> sqlx::query::Query<'q, DB, DB::Arguments>
where
    for<'t> &'t str: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    for<'t> &'t [u8]: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    for<'t> i64: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
{
    for a in args {
        q = match *a {
            Arg::Text(s) => q.bind(s),
            Arg::Bytes(b) => q.bind(b),
            Arg::Int(i) => q.bind(i),
        };
    }
    q
}

/// The caller's connection, by driver. Not for users: reach it through
/// [`TxDb`].
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

/// A database the in-transaction techniques run on: `sqlx::Postgres`,
/// `sqlx::MySql` (MySQL 8, MariaDB) or `sqlx::Sqlite`. Implemented by idem
/// for each database whose feature is enabled; not meant to be implemented
/// elsewhere.
pub trait TxDb: SqlDialect {
    #[doc(hidden)]
    fn any(conn: &mut Self::Connection) -> AnyConn<'_>;
}

#[cfg(feature = "postgres")]
impl TxDb for sqlx::Postgres {
    fn any(conn: &mut sqlx::PgConnection) -> AnyConn<'_> {
        AnyConn::Postgres(conn)
    }
}

#[cfg(feature = "mysql")]
impl TxDb for sqlx::MySql {
    fn any(conn: &mut sqlx::MySqlConnection) -> AnyConn<'_> {
        AnyConn::MySql(conn)
    }
}

#[cfg(feature = "sqlite")]
impl TxDb for sqlx::Sqlite {
    fn any(conn: &mut sqlx::SqliteConnection) -> AnyConn<'_> {
        AnyConn::Sqlite(conn)
    }
}

/// Runs `$body` with `$c` bound to the concrete connection of `$conn`
/// (an [`AnyConn`]), once per enabled driver.
macro_rules! on_conn {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            #[cfg(feature = "postgres")]
            $crate::db::AnyConn::Postgres($c) => $body,
            #[cfg(feature = "mysql")]
            $crate::db::AnyConn::MySql($c) => $body,
            #[cfg(feature = "sqlite")]
            $crate::db::AnyConn::Sqlite($c) => $body,
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

    /// Runs a statement without parameters over the simple protocol
    /// (`SAVEPOINT`, which MySQL does not prepare).
    pub(crate) async fn simple(&mut self, sql: String) -> Result<(), sqlx::Error> {
        let q = sqlx::raw_sql(sqlx::AssertSqlSafe(sql));
        on_conn!(self, |c| q.execute(&mut **c).await.map(drop))
    }
}

#[cfg(feature = "postgres")]
impl<'c> From<&'c mut sqlx::PgConnection> for AnyConn<'c> {
    fn from(c: &'c mut sqlx::PgConnection) -> Self {
        AnyConn::Postgres(c)
    }
}

#[cfg(feature = "mysql")]
impl<'c> From<&'c mut sqlx::MySqlConnection> for AnyConn<'c> {
    fn from(c: &'c mut sqlx::MySqlConnection) -> Self {
        AnyConn::MySql(c)
    }
}

#[cfg(feature = "sqlite")]
impl<'c> From<&'c mut sqlx::SqliteConnection> for AnyConn<'c> {
    fn from(c: &'c mut sqlx::SqliteConnection) -> Self {
        AnyConn::Sqlite(c)
    }
}
