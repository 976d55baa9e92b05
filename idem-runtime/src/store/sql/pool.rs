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
    pub(crate) fn dialect(&self) -> crate::sql_kernel::Dialect {
        match self {
            #[cfg(feature = "postgres")]
            Pool::Postgres(_) => crate::sql_kernel::Dialect::Postgres,
            #[cfg(feature = "mysql")]
            Pool::MySql(_) => crate::sql_kernel::Dialect::MySql,
            #[cfg(feature = "sqlite")]
            Pool::Sqlite(_) => crate::sql_kernel::Dialect::Sqlite,
        }
    }
}

impl Pool {
    /// The most connections the pool opens.
    pub(crate) fn max_connections(&self) -> u32 {
        match self {
            #[cfg(feature = "postgres")]
            Pool::Postgres(p) => p.options().get_max_connections(),
            #[cfg(feature = "mysql")]
            Pool::MySql(p) => p.options().get_max_connections(),
            #[cfg(feature = "sqlite")]
            Pool::Sqlite(l) => l.pool.options().get_max_connections(),
        }
    }
}

/// Operations in flight per pool connection before further ones wait for a turn
/// in the store's [`SendQueue`](crate::store::SendQueue): two, so the next
/// statement is already waiting for a connection when one comes back, while the
/// pool's own acquire queue stays about one statement long. A burst then waits
/// in idem's queue, bounded by each caller's own budget, instead of in the
/// pool's acquire, bounded by its `acquire_timeout` and reported as
/// `PoolTimedOut`, which cannot tell a busy pool from a database that cannot
/// be reached (issue 20).
pub(crate) const IN_FLIGHT_PER_CONNECTION: usize = 2;

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

/// Runs `$body` with `$p` bound to the store's sqlx pool; SQLite holds the
/// process's writer turn.
macro_rules! on_pool {
    ($store:expr, |$p:ident| $body:expr) => {
        match &$store.pool {
            #[cfg(feature = "postgres")]
            $crate::store::sql::pool::Pool::Postgres($p) => $body,
            #[cfg(feature = "mysql")]
            $crate::store::sql::pool::Pool::MySql($p) => $body,
            #[cfg(feature = "sqlite")]
            $crate::store::sql::pool::Pool::Sqlite(lite) => {
                // This process's SQLite writers take turns.
                let _turn = lite.writer.lock().await;
                let $p = &lite.pool;
                $body
            }
        }
    };
}
pub(crate) use on_pool;
