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

impl Arg<'_> {
    /// The value as a key part (bytes are shown as their length).
    pub(crate) fn render(&self) -> String {
        match self {
            Arg::Text(s) => (*s).to_owned(),
            Arg::Bytes(b) => format!("<{} bytes>", b.len()),
            Arg::Int(i) => i.to_string(),
        }
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

/// `?` placeholders in `sql` as the dialect writes them: PostgreSQL's
/// `$1, $2, …`; the others take `?` as is. For statements whose text has no
/// `?` inside literals (the techniques' own, built from checked identifiers).
pub(crate) fn placeholders(dialect: super::Dialect, sql: &str) -> String {
    if dialect != super::Dialect::Postgres {
        return sql.to_owned();
    }
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
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

/// What a body run in the caller's transaction returns (the transactional
/// guard's, insert-once's, a retried transaction's): its future, boxed, borrowing
/// the transaction (`|tx, fence| Box::pin(async move { … })`).
pub type TxBody<'a, T, E> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, E>> + Send + 'a>>;

/// The caller's transaction as the body sees it: derefs to the connection
/// (`query.execute(&mut **tx)`, as with a `&mut sqlx::Transaction`), and
/// [`transaction`](Self::transaction) gives the transaction itself.
///
/// Why not a plain `&mut sqlx::Transaction`: the body's future borrows it for
/// a lifetime of the guard's choosing, so the body must be a higher-ranked
/// closure; taking this wrapper (which outlives that borrow) lets the body
/// also borrow the caller's other locals, and keeps the call `Send` (an
/// `AsyncFnOnce` bound cannot be proven `Send` by rustc 1.95 inside
/// `tokio::spawn`).
#[derive(Debug)]
pub struct InTx<'g, 't, DB: TxDb> {
    tx: &'g mut sqlx::Transaction<'t, DB>,
}

impl<'g, 't, DB: TxDb> InTx<'g, 't, DB> {
    pub(crate) fn new(tx: &'g mut sqlx::Transaction<'t, DB>) -> Self {
        InTx { tx }
    }
}

impl<'t, DB: TxDb> InTx<'_, 't, DB> {
    /// The caller's transaction.
    pub fn transaction(&mut self) -> &mut sqlx::Transaction<'t, DB> {
        self.tx
    }
}

impl<DB: TxDb> std::ops::Deref for InTx<'_, '_, DB> {
    type Target = DB::Connection;
    fn deref(&self) -> &DB::Connection {
        self.tx
    }
}

impl<DB: TxDb> std::ops::DerefMut for InTx<'_, '_, DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        self.tx
    }
}
