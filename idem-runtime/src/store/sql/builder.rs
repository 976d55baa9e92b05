//! [`SqlStoreBuilder`]: a [`SqlStore`] connecting itself, configured like
//! `RedisStore::builder` (table names, pool size, acquire timeout, migrations
//! on request). A store on a pool the application made stays the plain
//! constructors (`SqlStore::postgres(pool)`, `::mysql`, `::sqlite`).

use std::time::Duration;

use super::errors::map_err;
use super::names::TableNames;
use super::pool::pool_options;
use super::store::SqlStore;
use crate::sql_kernel::Dialect;
use crate::store::StoreError;

/// Configures a [`SqlStore`] that opens its own pool.
///
/// ```no_run
/// # async fn f() -> Result<(), idem::Error> {
/// use idem::store::sql::{SqlStore, TableNames};
/// let store = SqlStore::builder("postgres://app@db/shop")
///     .tables(TableNames::new("idem_records")?)
///     .max_connections(8)
///     .migrate(true) // create the tables if missing (off by default)
///     .connect()
///     .await?;
/// # drop(store); Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct SqlStoreBuilder {
    url: String,
    tables: TableNames,
    max_connections: Option<u32>,
    acquire_timeout: Duration,
    migrate: bool,
}

impl SqlStore {
    /// A builder for `url`: `postgres://`/`postgresql://`, `mysql://`/`mariadb://`
    /// or `sqlite:` (created if missing; WAL, `busy_timeout` 5 s).
    pub fn builder(url: impl Into<String>) -> SqlStoreBuilder {
        SqlStoreBuilder {
            url: url.into(),
            tables: TableNames::default(),
            max_connections: None,
            acquire_timeout: Duration::from_secs(5),
            migrate: false,
        }
    }
}

impl SqlStoreBuilder {
    /// Where the records, fences and tokens live (default `idem_records`, …).
    pub fn tables(mut self, names: TableNames) -> Self {
        self.tables = names;
        self
    }

    /// The pool's size (default 16; 4 for SQLite, which has one writer).
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = Some(n);
        self
    }

    /// How long a store operation may wait for a pooled connection (default 5 s;
    /// the call's operation budget still cuts it).
    pub fn acquire_timeout(mut self, t: Duration) -> Self {
        // Saturated: sqlx adds it to an `Instant`, which overflows (panics)
        // past a few hundred years (issue 24 l).
        self.acquire_timeout = t.min(crate::policy::MAX_DURATION);
        self
    }

    /// Creates the tables if missing once connected (default off: migrations run
    /// only when asked; see `ddl()` to apply them with your own tool).
    pub fn migrate(mut self, on: bool) -> Self {
        self.migrate = on;
        self
    }

    /// Connects (no ping on acquire: see the module docs), and migrates if asked.
    pub async fn connect(self) -> Result<SqlStore, StoreError> {
        let url = self.url.clone();
        let store = match Dialect::from_url(&url) {
            #[cfg(feature = "postgres")]
            Some(Dialect::Postgres) => "PostgreSQL store",
            #[cfg(feature = "mysql")]
            Some(Dialect::MySql) => "MySQL/MariaDB store",
            #[cfg(feature = "sqlite")]
            Some(Dialect::Sqlite) => "SQLite store",
            _ => "SQL store",
        };
        self.connect_inner()
            .await
            .map_err(|e| crate::store::url::at_startup(store, &url, e))
    }

    async fn connect_inner(self) -> Result<SqlStore, StoreError> {
        let store = match Dialect::from_url(&self.url) {
            #[cfg(feature = "postgres")]
            Some(Dialect::Postgres) => {
                let pool = pool_options::<sqlx::Postgres>(self.max_connections.unwrap_or(16))
                    .acquire_timeout(self.acquire_timeout)
                    .connect(&self.url)
                    .await
                    .map_err(map_err)?;
                SqlStore::postgres(pool)
            }
            #[cfg(feature = "mysql")]
            Some(Dialect::MySql) => {
                let pool = pool_options::<sqlx::MySql>(self.max_connections.unwrap_or(16))
                    .acquire_timeout(self.acquire_timeout)
                    .connect(&self.url.replacen("mariadb:", "mysql:", 1))
                    .await
                    .map_err(map_err)?;
                SqlStore::mysql(pool)
            }
            #[cfg(feature = "sqlite")]
            Some(Dialect::Sqlite) => {
                let opts = self.url.parse().map_err(map_err)?;
                let pool = pool_options::<sqlx::Sqlite>(self.max_connections.unwrap_or(4))
                    .acquire_timeout(self.acquire_timeout);
                SqlStore::open_pool(opts, pool).await?
            }
            _ => return Err(unsupported(&self.url)),
        };
        let store = store.with_tables(self.tables);
        if self.migrate {
            store.migrate().await?;
        }
        Ok(store)
    }
}

/// A URL whose scheme names no enabled dialect.
fn unsupported(url: &str) -> StoreError {
    let enabled: Vec<&str> = [
        cfg!(feature = "postgres").then_some("postgres"),
        cfg!(feature = "mysql").then_some("mysql"),
        cfg!(feature = "sqlite").then_some("sqlite"),
    ]
    .into_iter()
    .flatten()
    .collect();
    StoreError::config(format!(
        "unsupported database URL scheme `{}` (enabled: {})",
        url.split(':').next().unwrap_or(""),
        enabled.join(", ")
    ))
}
