//! The ways to build a [`SqlStore`]: on a pool the caller made
//! (`SqlStore::postgres(pool)`, `::mysql`, `::sqlite`), or connecting itself
//! (`connect(url)`, `connect_postgres`, `connect_mysql`, `connect_sqlite`,
//! `open(path)`). They live with the store, not in the dialect modules, so the
//! dialect modules stay leaves that only run statements.

#[cfg(feature = "sqlite")]
use std::path::Path;
#[cfg(feature = "sqlite")]
use std::time::Duration;

use super::errors::map_err;
use super::names::TableNames;
use super::pool::{Pool, pool_options};
use super::store::SqlStore;
use crate::store::StoreError;

impl SqlStore {
    /// A PostgreSQL store on `pool` with the default table names.
    #[cfg(feature = "postgres")]
    pub fn postgres(pool: sqlx::PgPool) -> Self {
        Self::from_pool(Pool::Postgres(pool), TableNames::default())
    }

    /// A MySQL/MariaDB store on `pool` with the default table names.
    #[cfg(feature = "mysql")]
    pub fn mysql(pool: sqlx::MySqlPool) -> Self {
        Self::from_pool(Pool::MySql(pool), TableNames::default())
    }

    /// A SQLite store on `pool` with the default table names. Open the pool in WAL
    /// mode with a `busy_timeout` (as [`open`](Self::open) does).
    #[cfg(feature = "sqlite")]
    pub fn sqlite(pool: sqlx::SqlitePool) -> Self {
        Self::from_pool(
            Pool::Sqlite(super::pool::Lite::new(pool)),
            TableNames::default(),
        )
    }

    /// Connects by URL scheme: `postgres://`/`postgresql://`, `mysql://`/`mariadb://`
    /// or `sqlite:` (the file is created if missing; WAL, `busy_timeout` 5 s), with
    /// the defaults of `connect_postgres`, `connect_mysql` and `open`. Does not
    /// create tables.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::builder(url).connect().await
    }

    /// Connects a pool of up to 16 connections (5 s acquire timeout, no ping on
    /// acquire: see the module docs). Does not create tables.
    #[cfg(feature = "postgres")]
    pub async fn connect_postgres(url: &str) -> Result<Self, StoreError> {
        let pool = pool_options::<sqlx::Postgres>(16)
            .connect(url)
            .await
            .map_err(|e| crate::store::url::at_startup("PostgreSQL store", url, map_err(e)))?;
        Ok(Self::postgres(pool))
    }

    /// Connects a pool of up to 16 connections (5 s acquire timeout, no ping on
    /// acquire: see the module docs). Does not create tables.
    #[cfg(feature = "mysql")]
    pub async fn connect_mysql(url: &str) -> Result<Self, StoreError> {
        let pool = pool_options::<sqlx::MySql>(16)
            .connect(url)
            .await
            .map_err(|e| crate::store::url::at_startup("MySQL/MariaDB store", url, map_err(e)))?;
        Ok(Self::mysql(pool))
    }

    /// Opens (creating if missing) a SQLite database file: WAL journal,
    /// `synchronous = NORMAL`, `busy_timeout` 5 s, up to 4 connections, no ping on
    /// acquire (see the module docs). Does not create tables.
    #[cfg(feature = "sqlite")]
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(sqlx::sqlite::SqliteConnectOptions::new().filename(path)).await
    }

    /// Like [`open`](Self::open), from a `sqlite:` URL.
    #[cfg(feature = "sqlite")]
    pub async fn connect_sqlite(url: &str) -> Result<Self, StoreError> {
        let opts: sqlx::sqlite::SqliteConnectOptions = url.parse().map_err(map_err)?;
        Self::open_with(opts).await
    }

    #[cfg(feature = "sqlite")]
    async fn open_with(opts: sqlx::sqlite::SqliteConnectOptions) -> Result<Self, StoreError> {
        Self::open_pool(opts, pool_options::<sqlx::Sqlite>(4)).await
    }

    /// A SQLite pool with idem's settings (WAL, `synchronous = NORMAL`,
    /// `busy_timeout` 5 s, created if missing) on top of `opts`.
    #[cfg(feature = "sqlite")]
    pub(super) async fn open_pool(
        opts: sqlx::sqlite::SqliteConnectOptions,
        pool: sqlx::pool::PoolOptions<sqlx::Sqlite>,
    ) -> Result<Self, StoreError> {
        use sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
        let opts = opts
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5));
        let pool = pool.connect_with(opts).await.map_err(map_err)?;
        Ok(Self::sqlite(pool))
    }
}
