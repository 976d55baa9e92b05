//! One fresh database per test, on every dialect: a PostgreSQL schema, a
//! MariaDB database, or a SQLite temp directory, removed when dropped. Every
//! SQL fixture of the suite (the record store's, the consume log's, the state
//! machine's) stands on it, as `sqlx::test` gives each test a database of its
//! own. A missing server fails the test loudly.

use std::path::PathBuf;
use std::str::FromStr as _;
use std::time::Duration;

use idem::db::Dialect;

use super::sql::{mysql_url, pg_url, suffix};
use super::tempdir::TempDir;

/// A pool on one of the three databases.
#[derive(Debug, Clone)]
pub(crate) enum Pool {
    Pg(sqlx::PgPool),
    My(sqlx::MySqlPool),
    Lite(sqlx::SqlitePool),
}

impl Pool {
    /// Runs `sql` (one or more statements), panicking with it on failure.
    pub(crate) async fn exec(&self, sql: &str) {
        let q = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()));
        match self {
            Pool::Pg(p) => q.execute(p).await.map(drop),
            Pool::My(p) => q.execute(p).await.map(drop),
            Pool::Lite(p) => q.execute(p).await.map(drop),
        }
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// The one integer `sql` selects.
    pub(crate) async fn scalar(&self, sql: &str) -> i64 {
        let q = sqlx::AssertSqlSafe(sql.to_owned());
        match self {
            Pool::Pg(p) => sqlx::query_scalar(q).fetch_one(p).await,
            Pool::My(p) => sqlx::query_scalar(q).fetch_one(p).await,
            Pool::Lite(p) => sqlx::query_scalar(q).fetch_one(p).await,
        }
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

/// Where a fresh database lives.
#[derive(Debug)]
enum Place {
    /// A PostgreSQL schema or a MariaDB database of this name.
    Server(String),
    Lite(TempDir),
}

/// A fresh database of `dialect`; dropped with everything in it.
#[derive(Debug)]
pub(crate) struct FreshDb {
    dialect: Dialect,
    place: Option<Place>,
}

impl FreshDb {
    /// Creates it, named `<prefix>_<random>` on the servers.
    pub(crate) async fn new(dialect: Dialect, prefix: &str) -> FreshDb {
        let place = match dialect {
            Dialect::Postgres | Dialect::MySql => {
                let name = format!("{prefix}_{}", suffix());
                let what = if dialect == Dialect::Postgres {
                    "SCHEMA"
                } else {
                    "DATABASE"
                };
                admin(dialect, &format!("CREATE {what} {name}")).await;
                Place::Server(name)
            }
            _ => Place::Lite(TempDir::new()),
        };
        FreshDb {
            dialect,
            place: Some(place),
        }
    }

    /// The schema (PostgreSQL) or database (MariaDB) name.
    pub(crate) fn name(&self) -> &str {
        match &self.place {
            Some(Place::Server(name)) => name,
            _ => panic!("a SQLite fixture has no server-side name"),
        }
    }

    /// A file in the SQLite fixture's directory.
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        match &self.place {
            Some(Place::Lite(dir)) => dir.path().join(name),
            _ => panic!("only a SQLite fixture has files"),
        }
    }

    /// A PostgreSQL pool of `max` connections with the schema as `search_path`.
    pub(crate) async fn pg(&self, max: u32) -> sqlx::PgPool {
        pg_on(self.name(), max).await
    }

    /// The server URL that reaches the database: MariaDB's names it;
    /// PostgreSQL's is the server's (the schema is a `search_path` or a
    /// qualifier, not part of the URL).
    pub(crate) fn url(&self) -> String {
        match self.dialect {
            Dialect::MySql => {
                let base = mysql_url();
                format!("{}/{}", base.rsplit_once('/').unwrap().0, self.name())
            }
            _ => pg_url(),
        }
    }

    /// A MariaDB pool of `max` connections on the database.
    pub(crate) async fn mysql(&self, max: u32) -> sqlx::MySqlPool {
        let url = self.url();
        sqlx::mysql::MySqlPoolOptions::new()
            .max_connections(max)
            .acquire_timeout(Duration::from_secs(60))
            .test_before_acquire(false)
            .connect(&url)
            .await
            .unwrap_or_else(|e| panic!("MariaDB at {url} is required: {e}"))
    }

    /// A SQLite pool of `max` connections on `file` of the directory (WAL,
    /// 20 s busy timeout: tests share 2 cores).
    pub(crate) async fn sqlite(&self, file: &str, max: u32) -> sqlx::SqlitePool {
        let opts = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(self.file(file))
            .create_if_missing(true)
            .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(20));
        sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(max)
            .test_before_acquire(false)
            .connect_with(opts)
            .await
            .expect("open sqlite")
    }

    /// A pool of `max` connections, whatever the dialect (SQLite: `biz.db`).
    pub(crate) async fn pool(&self, max: u32) -> Pool {
        match self.dialect {
            Dialect::Postgres => Pool::Pg(self.pg(max).await),
            Dialect::MySql => Pool::My(self.mysql(max).await),
            _ => Pool::Lite(self.sqlite("biz.db", max).await),
        }
    }
}

impl Drop for FreshDb {
    fn drop(&mut self) {
        let Some(Place::Server(name)) = self.place.take() else {
            return; // a SQLite directory goes with its `TempDir`
        };
        // Bounded lock waits: a pooled connection left inside a transaction
        // must fail the cleanup loudly, not hang the suite.
        let (dialect, sql) = match self.dialect {
            Dialect::Postgres => (
                Dialect::Postgres,
                format!("SET lock_timeout = '20s'; DROP SCHEMA IF EXISTS {name} CASCADE"),
            ),
            d => (
                d,
                format!("SET SESSION lock_wait_timeout = 20; DROP DATABASE IF EXISTS {name}"),
            ),
        };
        // Drop runs inside the test's runtime: a thread with its own.
        let done = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(admin(dialect, &sql));
        })
        .join();
        // Not while unwinding from the test's own failure (that would abort).
        if done.is_err() && !std::thread::panicking() {
            panic!("fresh database cleanup failed (a pooled connection left in a transaction?)");
        }
    }
}

/// A PostgreSQL pool of `max` connections with `schema` as `search_path`
/// (also how a child process attaches to its parent's fixture).
pub(crate) async fn pg_on(schema: &str, max: u32) -> sqlx::PgPool {
    let opts = sqlx::postgres::PgConnectOptions::from_str(&pg_url())
        .unwrap()
        .options([("search_path", schema)]);
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(Duration::from_secs(60))
        .test_before_acquire(false)
        .connect_with(opts)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {} is required: {e}", pg_url()))
}

/// Runs `sql` on the server's default database.
pub(crate) async fn admin(dialect: Dialect, sql: &str) {
    let q = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()));
    let r = match dialect {
        Dialect::Postgres => match sqlx::PgPool::connect(&pg_url()).await {
            Ok(p) => q.execute(&p).await.map(drop),
            Err(e) => Err(e),
        },
        _ => match sqlx::MySqlPool::connect(&mysql_url()).await {
            Ok(p) => q.execute(&p).await.map(drop),
            Err(e) => Err(e),
        },
    };
    r.unwrap_or_else(|e| panic!("{sql} (is the {dialect:?} server running?): {e}"));
}
