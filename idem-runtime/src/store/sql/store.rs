//! [`SqlStore`]: the `Store` implementation shared by the three dialects. Only
//! the claim (whose best shape differs per database) and the driver calls live in
//! the dialect modules; every other operation is one statement from `ddl.rs`.
//! The constructors are in `connect.rs`.

use std::sync::Arc;
use std::time::Duration;

use super::bind::{Arg, Sent, complete_args};
use super::census_sql::CensusStatements;
use super::ddl::Statements;
use super::errors::{map_err, missing};
use super::key::check_key;
use super::local::{KeyLocks, LocalClaims};
use super::names::TableNames;
use super::pool::{IN_FLIGHT_PER_CONNECTION, Pool};
use super::row::RawRow;
use super::schema::statements;
use super::stmt::Stmt;
use super::table_set::{Prepared, prepare};
use super::token_sql::TokenStatements;
use super::{PURGE_BUDGET, purge_loop};
use crate::policy::MAX_DURATION;
use crate::sql_kernel::{Dialect, micros, retry_conflicts};
use crate::store::{
    BoxFuture, Census, Claim, ClaimRequest, Counted, Owned, Owner, PurgeReport, RecordState, Store,
    StoreError, Warning,
};

/// Idempotency records in a SQL database: PostgreSQL, MySQL/MariaDB or SQLite.
///
/// Build it from a pool (`SqlStore::postgres(pool)`, `::mysql(pool)`,
/// `::sqlite(pool)`), or let it connect (`connect_postgres(url)`,
/// `connect_mysql(url)`, `open(path)` for a SQLite file). Then create the tables
/// once with [`migrate`](Self::migrate) or your own migration tool
/// ([`ddl`](super::ddl)); nothing is created implicitly.
///
/// ```no_run
/// # async fn f() -> Result<(), idem::store::StoreError> {
/// use idem::store::sql::SqlStore;
/// let store = SqlStore::open("idem.db").await?; // SQLite, WAL, busy_timeout 5 s
/// store.migrate().await?;
/// let idem = idem::Idem::builder().store(store).namespace("shop").build();
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SqlStore {
    pub(crate) pool: Pool,
    // The names and statement texts are shared, not copied: a claim clones
    // the store into the task that runs it to its end, and by value that
    // copied every statement string of every table on each call (issue 29).
    pub(crate) names: Arc<TableNames>,
    pub(crate) sql: Arc<Statements>,
    /// The one-time token table's statements (`token.rs`).
    pub(crate) tok: Arc<TokenStatements>,
    /// Every registered table set's purge, count and probes (`table_set.rs`).
    pub(crate) sets: Arc<[Prepared]>,
    /// The operators' counts (`census_sql.rs`).
    census: Arc<CensusStatements>,
    pub(crate) dialect: Dialect,
    pub(super) locks: Arc<KeyLocks>,
    pub(super) local: Arc<LocalClaims>,
    /// Bounds the operations in flight to the pool's size (see `pool.rs`).
    queue: Arc<crate::store::SendQueue>,
    pub(crate) sent: Sent,
}

impl SqlStore {
    pub(crate) fn from_pool(pool: Pool, names: TableNames) -> Self {
        let dialect = pool.dialect();
        let limit = (pool.max_connections() as usize).saturating_mul(IN_FLIGHT_PER_CONNECTION);
        SqlStore {
            queue: std::sync::Arc::new(crate::store::SendQueue::new(limit)),
            sql: Arc::new(Statements::new(dialect, &names)),
            tok: Arc::new(TokenStatements::new(dialect, &names)),
            sets: prepare(dialect, &names).into(),
            census: Arc::new(CensusStatements::new(dialect, &names)),
            pool,
            names: Arc::new(names),
            dialect,
            locks: std::sync::Arc::default(),
            local: std::sync::Arc::default(),
            sent: Sent::default(),
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
    #[cfg(feature = "bench")]
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

    /// Creates idem's tables (and schema, sequence, indexes) if they do not
    /// exist, and brings tables an earlier version created up to date.
    /// Idempotent; never called implicitly.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let upgrades = super::schema::upgrade_count(self.dialect, &self.names);
        for (i, s) in statements(self.dialect, &self.names)
            .into_iter()
            .enumerate()
        {
            let stmt = Stmt::from(s);
            match self.execute(&stmt, &[]).await {
                Ok(_) => {}
                Err(e) if i < upgrades && super::schema::nothing_to_upgrade(&e) => {}
                Err(e) => return Err(map_err(e)),
            }
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

    pub(crate) async fn exists(&self, stmt: &Stmt, args: &[Arg<'_>]) -> Result<bool, sqlx::Error> {
        dispatch!(&self.pool, |p, m| m::exists(p, &self.sent, stmt, args)
            .await)
    }
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
        self.dialect.name()
    }

    fn claim<'a>(&'a self, req: ClaimRequest<'a>) -> BoxFuture<'a, Result<Claim, StoreError>> {
        Box::pin(self.claim_in_turn(req))
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        payload: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(async move {
            check_key(self.dialect, key)?;
            let o = owner.to_bytes();
            let args = complete_args(payload, ttl, key, &o);
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
            self.local.drop_key(key);
            // (`owned_change` checks the key.) Nothing deleted and no row at all: released already (a retry after
            // a lost reply).
            self.owned_change(&self.sql.release, &self.sql.exists, key, owner)
                .await
        })
    }

    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(async move {
            check_key(self.dialect, key)?;
            let o = owner.to_bytes();
            let args = [Arg::Int(micros(lease)), Arg::Text(key), Arg::Bytes(&o)];
            let sent = std::time::Instant::now();
            let n = self.execute(&self.sql.renew, &args).await;
            match n {
                Ok(n) if n > 0 => {
                    self.local
                        .extend(key, owner, sent + lease.min(MAX_DURATION));
                    Ok(Owned::Applied)
                }
                other => {
                    self.local.drop_key(key);
                    other.map(owned).map_err(map_err)
                }
            }
        })
    }

    fn send_queue(&self) -> Option<&crate::store::SendQueue> {
        Some(&self.queue)
    }

    /// One table of the same database.
    fn tokens(&self) -> Option<&dyn crate::store::token::TokenStore> {
        Some(self)
    }

    fn inspect<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecordState>, StoreError>> {
        Box::pin(async move {
            check_key(self.dialect, key)?;
            self.fetch(&self.sql.select_live, &[Arg::Text(key)])
                .await?
                .map(RawRow::into_state)
                .transpose()
        })
    }

    fn forget<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            check_key(self.dialect, key)?;
            self.local.drop_key(key);
            let n = self
                .execute(&self.sql.forget, &[Arg::Text(key)])
                .await
                .map_err(map_err)?;
            Ok(n > 0)
        })
    }

    fn purge_expired(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(async move { Ok(self.purge_report(false).await?.total()) })
    }

    /// Each registered table set's expired rows, in schema order (records,
    /// one-time tokens, then the techniques' tables), in one time budget.
    fn purge_report(&self, dry_run: bool) -> BoxFuture<'_, Result<PurgeReport, StoreError>> {
        Box::pin(async move {
            let mut report = PurgeReport::default();
            let deadline = std::time::Instant::now() + PURGE_BUDGET;
            for set in self.sets.iter() {
                let n = match (dry_run, &set.expired, &set.purge) {
                    (true, Some(stmt), _) => {
                        let c =
                            dispatch!(&self.pool, |p, m| m::count(p, &self.sent, stmt, &[]).await)?;
                        u64::try_from(c).unwrap_or(0)
                    }
                    (false, _, Some(stmt)) => {
                        purge_loop(deadline, || self.execute(stmt, &[])).await?
                    }
                    _ => 0,
                };
                report.add(set.name, n);
            }
            Ok(report)
        })
    }

    /// One `GROUP BY` on the database.
    fn census<'a>(&'a self, namespace: &'a str) -> BoxFuture<'a, Result<Census, StoreError>> {
        Box::pin(async move {
            let prefix = crate::key::namespace_prefix(namespace);
            let len = match self.dialect {
                Dialect::MySql => prefix.len(),
                _ => prefix.chars().count(),
            } as i64;
            let args: Vec<Arg<'_>> = match self.dialect {
                Dialect::MySql => vec![Arg::Int(len), Arg::Int(len), Arg::Text(&prefix)],
                _ => vec![Arg::Text(&prefix), Arg::Int(len)],
            };
            let stmt = &self.census.census;
            let rows = dispatch!(&self.pool, |p, m| m::census(p, &self.sent, stmt, &args)
                .await)?;
            let mut census = Census::default();
            for (scene, state, expired, n) in rows {
                let counted = match (expired, state) {
                    (1, _) => Counted::Expired,
                    (_, 0) => Counted::InProgress,
                    _ => Counted::Done,
                };
                census.add(&scene, counted, u64::try_from(n).unwrap_or(0));
            }
            Ok(census)
        })
    }

    fn list<'a>(
        &'a self,
        namespace: &'a str,
        filter: crate::store::ListFilter<'a>,
    ) -> BoxFuture<'a, Result<Vec<(String, Counted)>, StoreError>> {
        Box::pin(self.list_keys(namespace, filter))
    }

    fn forget_if<'a>(
        &'a self,
        key: &'a str,
        seen: &'a RecordState,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.forget_seen(key, seen))
    }

    fn purge_namespace<'a>(
        &'a self,
        namespace: &'a str,
        dry_run: bool,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(self.purge_prefix(namespace, dry_run))
    }

    fn verify(&self) -> BoxFuture<'_, Result<Vec<Warning>, StoreError>> {
        Box::pin(async move {
            for (name, probe) in self.sets.iter().flat_map(|s| &s.probes) {
                self.exists(probe, &[])
                    .await
                    .map_err(|e| missing(name, e))?;
            }
            dispatch!(&self.pool, |p, m| m::warnings(p, &self.names).await)
        })
    }
}
