//! The pool of each dialect, as the SQL store and the constraint catalog hold
//! it, and the pool settings of the store's own constructors.

use std::time::Duration;

use sqlx::Database;

/// A pool of one of the dialects.
#[derive(Debug, Clone)]
pub(crate) enum Pool {
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
    #[cfg(feature = "mysql")]
    MySql(sqlx::MySqlPool),
    #[cfg(feature = "sqlite")]
    Sqlite(Lite),
}

impl Pool {
    /// The pool's dialect.
    pub(crate) fn dialect(&self) -> crate::db::Dialect {
        match self {
            #[cfg(feature = "postgres")]
            Pool::Postgres(_) => crate::db::Dialect::Postgres,
            #[cfg(feature = "mysql")]
            Pool::MySql(_) => crate::db::Dialect::MySql,
            #[cfg(feature = "sqlite")]
            Pool::Sqlite(_) => crate::db::Dialect::Sqlite,
        }
    }
}

/// A SQLite pool and the lock that makes this process's writers take turns.
///
/// SQLite has one writer at a time; a connection that finds the write lock taken
/// sleeps in the `busy_timeout` handler in steps of up to 100 ms, so letting
/// several local connections race for it turns a burst of short writes into
/// seconds of sleeping. Local writers queue here instead; other processes still
/// meet at the database lock and its `busy_timeout`.
#[cfg(feature = "sqlite")]
#[derive(Debug, Clone)]
pub(crate) struct Lite {
    pub(crate) pool: sqlx::SqlitePool,
    pub(crate) writer: std::sync::Arc<tokio::sync::Mutex<()>>,
}

#[cfg(feature = "sqlite")]
impl Lite {
    pub(crate) fn new(pool: sqlx::SqlitePool) -> Self {
        Lite {
            pool,
            writer: std::sync::Arc::default(),
        }
    }
}

/// The pool settings of the `connect_*`/`open` constructors: at most `max`
/// connections, 5 s acquire timeout, no ping on acquire (see the module docs).
pub(crate) fn pool_options<DB: Database>(max: u32) -> sqlx::pool::PoolOptions<DB> {
    sqlx::pool::PoolOptions::new()
        .max_connections(max)
        .acquire_timeout(Duration::from_secs(5))
        .test_before_acquire(false)
}
