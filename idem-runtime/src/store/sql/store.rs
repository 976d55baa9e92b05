//! [`SqlStore`]: the `Store` implementation shared by the three dialects. Only
//! the claim (whose best shape differs per database) and the driver calls live in
//! the dialect modules; every other operation is one statement from `ddl.rs`.

use std::time::Duration;

use sqlx::{Database, Encode, Type};

use super::ddl::{Statements, Stmt, statements};
use super::local::{KeyLocks, LocalClaims};
use super::{Dialect, RawRow, TableNames, map_err, micros, missing, purge_loop, retry_conflicts};
use crate::store::{
    BoxFuture, Claim, ClaimRequest, Owned, Owner, RecordState, Store, StoreError, Warning,
};

/// One bind parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    Text(&'a str),
    Bytes(&'a [u8]),
    Int(i64),
}

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

    fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
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

/// Builds a query with its parameters bound, for any of the three drivers, and
/// counts it as sent: every statement of the store is built here.
pub(crate) fn bind<'q, DB: Database>(
    sent: &Sent,
    stmt: &Stmt,
    args: &[Arg<'_>],
) -> sqlx::query::Query<'q, DB, DB::Arguments>
where
    for<'t> &'t str: Encode<'t, DB> + Type<DB>,
    for<'t> &'t [u8]: Encode<'t, DB> + Type<DB>,
    for<'t> i64: Encode<'t, DB> + Type<DB>,
{
    sent.one();
    let mut q = sqlx::query::<DB>(stmt.q());
    for a in args {
        q = match *a {
            Arg::Text(s) => q.bind(s),
            Arg::Bytes(b) => q.bind(b),
            Arg::Int(i) => q.bind(i),
        };
    }
    q
}

#[derive(Debug, Clone)]
pub(crate) enum Pool {
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
    #[cfg(feature = "mysql")]
    MySql(sqlx::MySqlPool),
    #[cfg(feature = "sqlite")]
    Sqlite(super::sqlite::Lite),
}

/// Runs `$body` with `$p` bound to the dialect's pool and `$m` to its module.
macro_rules! dispatch {
    ($pool:expr, |$p:ident, $m:ident| $body:expr) => {
        match $pool {
            #[cfg(feature = "postgres")]
            Pool::Postgres($p) => {
                use super::postgres as $m;
                $body
            }
            #[cfg(feature = "mysql")]
            Pool::MySql($p) => {
                use super::mysql as $m;
                $body
            }
            #[cfg(feature = "sqlite")]
            Pool::Sqlite($p) => {
                use super::sqlite as $m;
                $body
            }
        }
    };
}

/// Idempotency records in a SQL database: PostgreSQL, MySQL/MariaDB or SQLite.
///
/// Build it from a pool (`SqlStore::postgres(pool)`, `::mysql(pool)`,
/// `::sqlite(pool)`), or let it connect (`connect_postgres(url)`,
/// `connect_mysql(url)`, `open(path)` for a SQLite file). Then create the tables
/// once with [`migrate`](Self::migrate) or your own migration tool
/// ([`ddl`](super::ddl)); nothing is created implicitly.
///
/// ```no_run
/// # async fn f() -> Result<(), idem_runtime::store::StoreError> {
/// use idem_runtime::store::sql::SqlStore;
/// let store = SqlStore::open("idem.db").await?; // SQLite, WAL, busy_timeout 5 s
/// store.migrate().await?;
/// let idem = idem_runtime::Idem::builder().store(store).namespace("shop").build();
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SqlStore {
    pub(crate) pool: Pool,
    pub(crate) names: TableNames,
    pub(crate) sql: Statements,
    pub(crate) dialect: Dialect,
    locks: std::sync::Arc<KeyLocks>,
    local: std::sync::Arc<LocalClaims>,
    sent: Sent,
}

impl SqlStore {
    pub(crate) fn from_pool(pool: Pool, names: TableNames) -> Self {
        let dialect = match &pool {
            #[cfg(feature = "postgres")]
            Pool::Postgres(_) => Dialect::Postgres,
            #[cfg(feature = "mysql")]
            Pool::MySql(_) => Dialect::MySql,
            #[cfg(feature = "sqlite")]
            Pool::Sqlite(_) => Dialect::Sqlite,
        };
        SqlStore {
            sql: Statements::new(dialect, &names),
            pool,
            names,
            dialect,
            locks: std::sync::Arc::default(),
            local: std::sync::Arc::default(),
            sent: Sent::default(),
        }
    }

    /// Connects by URL scheme: `postgres://`/`postgresql://`, `mysql://`/`mariadb://`
    /// or `sqlite:` (the file is created if missing; WAL, `busy_timeout` 5 s), with
    /// the defaults of `connect_postgres`, `connect_mysql` and `open`. Does not
    /// create tables.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let scheme = url.split(':').next().unwrap_or("");
        match scheme {
            #[cfg(feature = "postgres")]
            "postgres" | "postgresql" => Self::connect_postgres(url).await,
            #[cfg(feature = "mysql")]
            "mysql" | "mariadb" => {
                Self::connect_mysql(&url.replacen("mariadb:", "mysql:", 1)).await
            }
            #[cfg(feature = "sqlite")]
            "sqlite" => Self::connect_sqlite(url).await,
            _ => Err(StoreError::Config(format!(
                "unsupported database URL scheme `{scheme}` (enabled: {})",
                [
                    cfg!(feature = "postgres").then_some("postgres"),
                    cfg!(feature = "mysql").then_some("mysql"),
                    cfg!(feature = "sqlite").then_some("sqlite"),
                ]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(", ")
            ))),
        }
    }

    /// Uses other table names (or a PostgreSQL schema) for this store.
    pub fn with_tables(self, names: TableNames) -> Self {
        Self::from_pool(self.pool, names)
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The table names.
    pub fn tables(&self) -> &TableNames {
        &self.names
    }

    /// The texts of the claim-path statements: `[select_live, claim, next_fence,
    /// complete]`, so the overhead benchmark's hand-written baseline sends the very
    /// same SQL. Not part of the API.
    #[doc(hidden)]
    pub fn __bench_statements(&self) -> [std::sync::Arc<str>; 4] {
        [
            self.sql.select_live.text(),
            self.sql.claim.text(),
            self.sql.next_fence.text(),
            self.sql.complete.text(),
        ]
    }

    /// Statements this store (and its clones) sent to the database so far,
    /// `BEGIN` and `COMMIT` included; claims answered by the local claim cache
    /// send none. For the round-trip tests. Not part of the API.
    #[doc(hidden)]
    pub fn __statements_sent(&self) -> u64 {
        self.sent.get()
    }

    /// Creates idem's tables (and schema, sequence, indexes) if they do not exist.
    /// Idempotent; never called implicitly.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        for s in statements(self.dialect, &self.names) {
            let stmt = Stmt::from(s);
            self.execute(&stmt, &[]).await.map_err(map_err)?;
        }
        Ok(())
    }

    pub(crate) async fn execute(&self, stmt: &Stmt, args: &[Arg<'_>]) -> Result<u64, sqlx::Error> {
        retry_conflicts(|| async {
            dispatch!(&self.pool, |p, m| m::execute(p, &self.sent, stmt, args)
                .await)
        })
        .await
    }

    async fn fetch(&self, stmt: &Stmt, args: &[Arg<'_>]) -> Result<Option<RawRow>, StoreError> {
        dispatch!(&self.pool, |p, m| m::fetch(p, &self.sent, stmt, args).await)
    }

    async fn exists(&self, stmt: &Stmt, args: &[Arg<'_>]) -> Result<bool, sqlx::Error> {
        dispatch!(&self.pool, |p, m| m::exists(p, &self.sent, stmt, args)
            .await)
    }
}

/// Longest key a record row holds (MySQL's `VARBINARY(768)`; the same bound on
/// every dialect). Keys from the guard are at most ~200 bytes plus the namespace
/// and scene; a longer one is refused rather than risking a server configured
/// without strict mode truncating two keys into one.
pub const MAX_KEY_BYTES: usize = 768;

fn check_key(key: &str) -> Result<(), StoreError> {
    if key.len() > MAX_KEY_BYTES {
        return Err(StoreError::Config(format!(
            "key of {} bytes is longer than the {MAX_KEY_BYTES} a SQL record holds (shorten the namespace or scene)",
            key.len()
        )));
    }
    Ok(())
}

fn owned(rows: u64) -> Owned {
    if rows > 0 {
        Owned::Applied
    } else {
        Owned::NotOwner
    }
}

impl Store for SqlStore {
    fn name(&self) -> &'static str {
        match self.dialect {
            Dialect::Postgres => "postgres",
            Dialect::MySql => "mysql",
            Dialect::Sqlite => "sqlite",
        }
    }

    fn claim<'a>(&'a self, req: ClaimRequest<'a>) -> BoxFuture<'a, Result<Claim, StoreError>> {
        Box::pin(async move {
            check_key(req.key)?;
            // See `local.rs`: local duplicates of a claim granted here need no round trip.
            if let Some(answer) = self.local.answer(req.key, req.owner) {
                return Ok(answer);
            }
            let arrived = std::time::Instant::now();
            let mut one_at_a_time = self.locks.lock(req.key).await;
            if let Some(answer) = self.local.answer(req.key, req.owner) {
                return Ok(answer);
            }
            if let Some(rec) = one_at_a_time.done_since(arrived) {
                return Ok(Claim::Done(rec));
            }
            let sent = std::time::Instant::now();
            let claim = dispatch!(&self.pool, |p, m| m::claim(p, &self.sql, &self.sent, req)
                .await)?;
            if let Claim::Claimed { fence } = claim {
                self.local
                    .hold(req.key, req.owner, fence, req.fingerprint, sent + req.lease);
            }
            one_at_a_time.remember(sent, &claim);
            Ok(claim)
        })
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        payload: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(async move {
            let o = owner.to_bytes();
            let args = [
                Arg::Bytes(payload),
                Arg::Int(micros(ttl)),
                Arg::Text(key),
                Arg::Bytes(&o),
            ];
            // Whatever the answer, the key is no longer an in-progress claim of ours.
            self.local.drop_key(key);
            let n = self
                .execute(&self.sql.complete, &args)
                .await
                .map_err(map_err)?;
            Ok(owned(n))
        })
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(async move {
            let o = owner.to_bytes();
            self.local.drop_key(key);
            let n = self
                .execute(&self.sql.release, &[Arg::Text(key), Arg::Bytes(&o)])
                .await
                .map_err(map_err)?;
            if n > 0 {
                return Ok(Owned::Applied);
            }
            // Nothing deleted. No row at all means it was released already (a retry
            // after a lost reply): done, as far as this owner is concerned.
            let exists = self
                .exists(&self.sql.exists, &[Arg::Text(key)])
                .await
                .map_err(map_err)?;
            Ok(if exists {
                Owned::NotOwner
            } else {
                Owned::Applied
            })
        })
    }

    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(async move {
            let o = owner.to_bytes();
            let args = [Arg::Int(micros(lease)), Arg::Text(key), Arg::Bytes(&o)];
            let sent = std::time::Instant::now();
            let n = self.execute(&self.sql.renew, &args).await;
            match n {
                Ok(n) if n > 0 => {
                    self.local.extend(key, owner, sent + lease);
                    Ok(Owned::Applied)
                }
                other => {
                    self.local.drop_key(key);
                    other.map(owned).map_err(map_err)
                }
            }
        })
    }

    fn inspect<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecordState>, StoreError>> {
        Box::pin(async move {
            self.fetch(&self.sql.select_live, &[Arg::Text(key)])
                .await?
                .map(RawRow::into_state)
                .transpose()
        })
    }

    fn forget<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            self.local.drop_key(key);
            let n = self
                .execute(&self.sql.forget, &[Arg::Text(key)])
                .await
                .map_err(map_err)?;
            Ok(n > 0)
        })
    }

    fn purge_expired(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(purge_loop(|| self.execute(&self.sql.purge, &[])))
    }

    fn verify(&self) -> BoxFuture<'_, Result<Vec<Warning>, StoreError>> {
        Box::pin(async move {
            for (name, probe) in &self.sql.probes {
                self.exists(probe, &[])
                    .await
                    .map_err(|e| missing(name, e))?;
            }
            dispatch!(&self.pool, |p, m| m::warnings(p).await)
        })
    }
}
