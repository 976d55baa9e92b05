//! Fixtures for the state-machine tests: the same `t_order` / `t_ledger` tables
//! in a fresh place per test (a PostgreSQL schema on the connection's
//! `search_path`, a MariaDB database, a SQLite temp file), because the
//! attribute names its table literally. Dropped with the fixture.

use idem::db::Dialect;

use crate::support::fresh::FreshDb;

/// The business tables, in SQL every dialect takes.
const TABLES: [&str; 3] = [
    "CREATE TABLE t_order (order_no VARCHAR(64) NOT NULL PRIMARY KEY, status VARCHAR(32) NOT NULL, version BIGINT NOT NULL DEFAULT 0)",
    "CREATE TABLE t_ledger (pay_no VARCHAR(64) NOT NULL PRIMARY KEY, order_no VARCHAR(64) NOT NULL, amount BIGINT NOT NULL)",
    "CREATE TABLE t_note (id VARCHAR(64) NOT NULL PRIMARY KEY)",
];

/// Connections per pool: five concurrent callbacks each hold one.
const POOL: u32 = 7;

/// What is removed when the fixture drops: the test's fresh database.
pub(crate) type Place = FreshDb;

async fn create<'c, E>(db: E, tables: &[&str])
where
    E: sqlx::Executor<'c> + Copy,
{
    for t in tables {
        sqlx::raw_sql(sqlx::AssertSqlSafe(*t))
            .execute(db)
            .await
            .expect("create state tables");
    }
}

pub(crate) async fn pg() -> (sqlx::PgPool, Place) {
    pg_with(&TABLES, POOL).await
}

/// A fresh PostgreSQL schema (on the pool's `search_path`) with `tables`.
pub(crate) async fn pg_with(tables: &[&str], size: u32) -> (sqlx::PgPool, Place) {
    let db = FreshDb::new(Dialect::Postgres, "idem_sm").await;
    let pool = db.pg(size).await;
    create(&pool, tables).await;
    (pool, db)
}

pub(crate) async fn mysql() -> (sqlx::MySqlPool, Place) {
    mysql_with(&TABLES, POOL).await
}

/// A fresh MariaDB database with `tables`.
pub(crate) async fn mysql_with(tables: &[&str], size: u32) -> (sqlx::MySqlPool, Place) {
    let db = FreshDb::new(Dialect::MySql, "idem_sm").await;
    let pool = db.mysql(size).await;
    create(&pool, tables).await;
    (pool, db)
}

pub(crate) async fn sqlite() -> (sqlx::SqlitePool, Place) {
    sqlite_with(&TABLES, POOL).await
}

/// A fresh SQLite file (WAL) with `tables`.
pub(crate) async fn sqlite_with(tables: &[&str], size: u32) -> (sqlx::SqlitePool, Place) {
    let db = FreshDb::new(Dialect::Sqlite, "idem_sm").await;
    let pool = db.sqlite("state.db", size).await;
    create(&pool, tables).await;
    (pool, db)
}

/// Compiles only if the value is `Send`.
pub(crate) fn assert_send<T: Send>(_: &T) {}

/// `join_all` without the `futures` crate: every future on its own task would
/// need `'static`; these borrow the test's locals, so poll them together.
pub(crate) async fn futures_join_all<F: std::future::Future>(
    fs: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let fs: Vec<_> = fs.map(Box::pin).collect();
    let mut outs: Vec<Option<F::Output>> = fs.iter().map(|_| None).collect();
    let mut fs: Vec<Option<_>> = fs.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, out) in fs.iter_mut().zip(outs.iter_mut()) {
            if let Some(fut) = f {
                match fut.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        *out = Some(v);
                        *f = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outs.into_iter()
        .map(|o| o.expect("polled to completion"))
        .collect()
}
