//! Statements with their parameters bound, for any of the three drivers, and
//! the count of statements sent (the round-trip tests pin it). Every statement
//! of the SQL stores is built by [`bind`].

use sqlx::{Database, Encode, Type};

use super::stmt::Stmt;

pub(crate) use crate::sql_kernel::Arg;

/// Statements this store sent to its database (`BEGIN` and `COMMIT` included),
/// shared by its clones. Every statement is built by [`bind`], which counts it;
/// the transactions count their `BEGIN` and `COMMIT` where they send them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sent(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl Sent {
    /// Counts one statement sent (a round trip to the database).
    pub(crate) fn one(&self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Builds a query with its parameters bound, for any of the three drivers, and
/// counts it as sent: every statement of the store is built here.
pub(crate) fn bind<'q, DB: Database>(
    sent: &Sent,
    stmt: &Stmt,
    args: &[Arg<'_>],
) -> sqlx::query::Query<'q, DB, DB::Arguments>
where
    for<'t> &'t str: Encode<'t, DB> + Type<DB>,
    for<'t> Option<&'t str>: Encode<'t, DB> + Type<DB>,
    for<'t> &'t [u8]: Encode<'t, DB> + Type<DB>,
    for<'t> i64: Encode<'t, DB> + Type<DB>,
{
    sent.one();
    crate::sql_kernel::arg::bind_args(sqlx::query::<DB>(stmt.q()), args)
}

/// The binds of [`Statements::complete`](super::ddl::Statements): payload, ttl
/// in µs, key, owner. One list for the store's complete and the transactional
/// guard's, which share the statement.
pub(crate) fn complete_args<'a>(
    payload: &'a [u8],
    ttl: std::time::Duration,
    key: &'a str,
    owner: &'a [u8; 16],
) -> [Arg<'a>; 4] {
    [
        Arg::Bytes(payload),
        Arg::Int(crate::sql_kernel::micros(ttl)),
        Arg::Text(key),
        Arg::Bytes(owner),
    ]
}
