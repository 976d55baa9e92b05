//! The three databases behind one trait, so each in-transaction test is
//! written once and run on PostgreSQL, MariaDB and SQLite: a fresh schema,
//! database or file per test (`state_support`), transactions begun the way
//! each database needs (SQLite: `BEGIN IMMEDIATE`), and `?` placeholders
//! rewritten to `$n` for PostgreSQL.

use std::future::Future;

use idem::sql::SqlStore;

use crate::state::support::{Place, mysql_with, pg_with, sqlite_with};

/// A bind value.
#[derive(Debug, Clone)]
pub(crate) enum V {
    I(i64),
    S(String),
}

/// How a body fails in the savepoint tests of the SQL techniques.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fail {
    No,
    /// The body returns its own error.
    Rust,
    /// A duplicate primary key: the database refuses the statement.
    Sql,
}

/// Every savepoint case: with and without the savepoint, a body failing
/// with its own error or a refused statement, then the caller committing
/// (`true`) or rolling back.
pub(crate) fn savepoint_cases() -> impl Iterator<Item = (bool, Fail, bool)> {
    [true, false].into_iter().flat_map(|savepoint| {
        [Fail::Rust, Fail::Sql].into_iter().flat_map(move |fail| {
            [true, false]
                .into_iter()
                .map(move |commit| (savepoint, fail, commit))
        })
    })
}

/// `sql` as written (`?` placeholders), or for PostgreSQL (`$n`).
pub(crate) fn sql_for(pg: bool, sql: &str) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(if pg { pg_sql(sql) } else { sql.to_owned() })
}

/// `?` placeholders as PostgreSQL's `$1, $2, …`.
pub(crate) fn pg_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(c);
        }
    }
    out
}

/// One of the three databases, as the tests use it.
pub(crate) trait TestDb: Clone + Send + Sync + 'static {
    type DB: idem::TxDb;
    const NAME: &'static str;
    /// A fresh place with `tables`, a pool of `size`, and idem's tables migrated.
    fn fixture(tables: &[&str], size: u32) -> impl Future<Output = (Self, Place)> + Send;
    /// A transaction as the techniques need it (SQLite: `BEGIN IMMEDIATE`).
    fn begin(&self) -> impl Future<Output = sqlx::Transaction<'static, Self::DB>> + Send;
    /// Runs a statement in `tx`: rows changed.
    fn exec<'a>(
        tx: &'a mut sqlx::Transaction<'static, Self::DB>,
        sql: &'a str,
        args: &'a [V],
    ) -> impl Future<Output = Result<u64, sqlx::Error>> + Send + 'a;
    /// The first column of the first row, as an integer (a count, a stock).
    fn int(&self, sql: &str, args: &[V]) -> impl Future<Output = i64> + Send;
    /// The SQL store over the same pool (default table names).
    fn store(&self) -> SqlStore;
    /// The pool.
    fn pool(&self) -> &sqlx::Pool<Self::DB>;
}

macro_rules! test_db {
    ($pool:ty, $db:ty, $name:literal, $fixture:ident, $store:ident, $begin:expr, $sql:expr) => {
        impl TestDb for $pool {
            type DB = $db;
            const NAME: &'static str = $name;

            async fn fixture(tables: &[&str], size: u32) -> (Self, Place) {
                let (pool, place) = $fixture(tables, size).await;
                SqlStore::$store(pool.clone())
                    .migrate()
                    .await
                    .expect("migrate idem tables");
                (pool, place)
            }

            async fn begin(&self) -> sqlx::Transaction<'static, $db> {
                // Under a loaded machine 150 callers queue for 12 connections (or
                // SQLite's write lock) longer than one acquire timeout: waiting
                // more is what a service would do, so `begin` tries again.
                let begin: Option<&'static str> = $begin;
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
                loop {
                    let r = match begin {
                        Some(b) => self.begin_with(b).await,
                        None => sqlx::Pool::begin(self).await,
                    };
                    match r {
                        Ok(tx) => return tx,
                        Err(e)
                            if (matches!(e, sqlx::Error::PoolTimedOut)
                                || idem::db::is_retryable_conflict(&e))
                                && std::time::Instant::now() < deadline => {}
                        Err(e) => panic!("begin: {e}"),
                    }
                }
            }

            fn exec<'a>(
                tx: &'a mut sqlx::Transaction<'static, $db>,
                sql: &'a str,
                args: &'a [V],
            ) -> impl Future<Output = Result<u64, sqlx::Error>> + Send + 'a {
                async move {
                    let text: String = $sql(sql);
                    let mut q = sqlx::query(sqlx::AssertSqlSafe(text));
                    for a in args {
                        q = match a {
                            V::I(i) => q.bind(*i),
                            V::S(s) => q.bind(s.clone()),
                        };
                    }
                    Ok(q.execute(&mut **tx).await?.rows_affected())
                }
            }

            async fn int(&self, sql: &str, args: &[V]) -> i64 {
                let text: String = $sql(sql);
                let mut q = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(text));
                for a in args {
                    q = match a {
                        V::I(i) => q.bind(*i),
                        V::S(s) => q.bind(s.clone()),
                    };
                }
                q.fetch_one(self).await.expect("read an integer")
            }

            fn store(&self) -> SqlStore {
                SqlStore::$store(self.clone())
            }

            fn pool(&self) -> &sqlx::Pool<$db> {
                self
            }
        }
    };
}

test_db!(
    sqlx::PgPool,
    sqlx::Postgres,
    "postgres",
    pg_with,
    postgres,
    None,
    pg_sql
);
test_db!(
    sqlx::MySqlPool,
    sqlx::MySql,
    "mariadb",
    mysql_with,
    mysql,
    None,
    str::to_owned
);
test_db!(
    sqlx::SqlitePool,
    sqlx::Sqlite,
    "sqlite",
    sqlite_with,
    sqlite,
    Some("BEGIN IMMEDIATE"),
    str::to_owned
);

/// True when `e` says the transaction lost to a concurrent one (retry it).
pub(crate) fn is_tx_conflict(e: &crate::support::AppError) -> bool {
    match e {
        crate::support::AppError::Idem(e) => matches!(e, idem::Error::TxConflict { .. }),
        crate::support::AppError::Db(e) => idem::db::is_retryable_conflict(e),
        _ => false,
    }
}

impl idem::db::pessimistic::TxConflict for crate::support::AppError {
    fn is_tx_conflict(&self) -> bool {
        is_tx_conflict(self)
    }
}
