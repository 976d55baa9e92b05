//! The record table's claim and complete, run on the *caller's* transaction
//! for the transactional guard (`Guard::in_tx`): the same table, statements
//! and row codec as the store's own claims, so one record format serves both.
//!
//! A claim made here is an uncommitted row. A concurrent duplicate's claim of
//! the same key meets it on the table's primary key and blocks there until the
//! first transaction ends: it then finds the finished record (commit) or
//! takes the key (rollback). Per dialect:
//!
//! - PostgreSQL: the store's one-statement claim. Under `READ COMMITTED` the
//!   blocked `INSERT … ON CONFLICT` sees the committed row and the statement
//!   is asked again with a fresh snapshot. Under `REPEATABLE READ` or
//!   `SERIALIZABLE` the database aborts the duplicate's transaction instead
//!   (SQLSTATE 40001); it is reported as retryable, and the retried
//!   transaction replays.
//! - MySQL/MariaDB: a plain read first (a finished key costs one `SELECT`),
//!   then the store's upsert with its fence from the database clock (not the
//!   store's fence slot, whose row would stay locked until the caller's
//!   commit and queue every claim of the keys sharing it, a guard nested in
//!   the body included), then a locking read (`LOCK IN SHARE MODE`: a current
//!   read, whatever the isolation level) of the row that won. The only row
//!   locked is the key's own (a primary-key lock, no gap lock), so a
//!   concurrent duplicate waits on that key and nothing else does.
//! - SQLite: the store's write half. The caller's transaction must be a write
//!   transaction from its start (`BEGIN IMMEDIATE`); a deferred one that read
//!   first gets `SQLITE_BUSY` when it tries to write, reported as retryable.

use std::time::Duration;

#[cfg(any(feature = "mysql", feature = "sqlite"))]
use crate::sql_kernel::micros;
use crate::sql_kernel::{AnyConn, Dialect};
use crate::store::sql::bind::Arg;
use crate::store::sql::bind::Sent;
use crate::store::sql::ddl::Statements;
use crate::store::sql::key::check_key;
use crate::store::sql::stmt::Stmt;
use crate::store::sql::{CLAIM_ROUNDS, TableNames};
use crate::store::{Claim, ClaimRequest, Owner, StoreError};

/// Why a statement in the caller's transaction failed.
#[derive(Debug)]
pub(crate) enum TxFail {
    /// The driver's error (conflicts, missing tables and outages are told apart
    /// by the caller with `db::classify` and `db::is_retryable_conflict`).
    Db(sqlx::Error),
    /// The row or the key is not what idem writes (codec, key too long).
    Store(StoreError),
}

impl From<sqlx::Error> for TxFail {
    fn from(e: sqlx::Error) -> Self {
        TxFail::Db(e)
    }
}

impl From<StoreError> for TxFail {
    fn from(e: StoreError) -> Self {
        TxFail::Store(e)
    }
}

/// A claim's answer in the caller's transaction.
#[derive(Debug)]
pub(crate) struct TxClaim {
    pub(crate) claim: Claim,
    /// The answer came after the claim met another transaction's row (it
    /// waited for it).
    pub(crate) waited: bool,
    /// A found row's time left before it expires (zero for `Claimed`).
    pub(crate) remaining: Duration,
}

/// The record statements of one table and dialect, built once per handle.
#[derive(Debug)]
pub(crate) struct TxStatements {
    dialect: Dialect,
    sql: Statements,
    /// MySQL: the live row as a locking (current) read.
    #[cfg_attr(not(feature = "mysql"), allow(dead_code))]
    select_locked: Stmt,
    /// MySQL: the claim without the fence slot (`mysql_sql.rs`).
    #[cfg_attr(not(feature = "mysql"), allow(dead_code))]
    claim_mysql: Stmt,
    sent: Sent,
}

impl TxStatements {
    pub(crate) fn new(dialect: Dialect, names: &TableNames) -> Self {
        let sql = Statements::new(dialect, names);
        let select_locked = Stmt::from(format!("{} LOCK IN SHARE MODE", sql.select_live.text()));
        let claim_mysql = crate::store::sql::mysql_sql::mysql_claim_in_tx(&names.records(dialect));
        TxStatements {
            dialect,
            sql,
            select_locked,
            claim_mysql,
            sent: Sent::default(),
        }
    }

    /// Claims `req.key` in the caller's transaction: `Claimed` (an uncommitted
    /// row), `Done` (a committed record) or `Busy` (a live claim committed by a
    /// guard outside any transaction), with whether it waited and the found
    /// row's remaining time.
    pub(crate) async fn claim(
        &self,
        conn: &mut AnyConn<'_>,
        req: ClaimRequest<'_>,
    ) -> Result<TxClaim, TxFail> {
        check_key(self.dialect, req.key)?;
        let (sql, sent) = (&self.sql, &self.sent);
        for round in 0..CLAIM_ROUNDS {
            let answer = match conn.re() {
                #[cfg(feature = "postgres")]
                AnyConn::Postgres(c) => {
                    let owner = req.owner.to_bytes();
                    let args = crate::store::sql::postgres::claim_args(&req, &owner);
                    let row = crate::store::sql::bind::bind(sent, &sql.claim, &args)
                        .fetch_optional(&mut *c)
                        .await?;
                    crate::store::sql::postgres::answer(row, req.owner)?
                }
                #[cfg(feature = "mysql")]
                AnyConn::MySql(c) => {
                    let owner = req.owner.to_bytes();
                    use crate::store::sql::mysql::{TakeArgs, fetch_on, take_in_tx};
                    let live = [Arg::Text(req.key)];
                    if let Some(row) = fetch_on(c, sent, &sql.select_live, &live).await? {
                        let (claim, remaining) = row.into_answer(req.owner)?;
                        return Ok(TxClaim {
                            claim,
                            waited: round > 0,
                            remaining,
                        });
                    }
                    let a = TakeArgs {
                        key: req.key,
                        owner: &owner,
                        fingerprint: &req.fingerprint.0,
                        lease_us: micros(req.lease),
                    };
                    match take_in_tx(c, sent, &self.claim_mysql, a).await? {
                        Some(fence) => Some((
                            Claim::Claimed {
                                fence: crate::outcome::Fence::new(fence as u64),
                            },
                            Duration::ZERO,
                        )),
                        None => fetch_on(c, sent, &self.select_locked, &live)
                            .await?
                            .map(|r| r.into_answer(req.owner))
                            .transpose()?,
                    }
                }
                #[cfg(feature = "sqlite")]
                AnyConn::Sqlite(c) => {
                    use crate::store::sql::sqlite::{fetch_on, take_on};
                    let live = [Arg::Text(req.key)];
                    if let Some(row) = fetch_on(c, sent, &sql.select_live, &live).await? {
                        let (claim, remaining) = row.into_answer(req.owner)?;
                        return Ok(TxClaim {
                            claim,
                            waited: round > 0,
                            remaining,
                        });
                    }
                    let lease = micros(req.lease);
                    take_on(
                        c,
                        sent,
                        &sql.next_fence,
                        &sql.claim,
                        &sql.select_live,
                        req,
                        lease,
                    )
                    .await?
                    .transpose()?
                }
            };
            if let Some((claim, remaining)) = answer {
                let waited = round > 0
                    || (!matches!(claim, Claim::Claimed { .. })
                        && self.dialect != Dialect::Postgres);
                return Ok(TxClaim {
                    claim,
                    waited,
                    remaining,
                });
            }
        }
        Err(TxFail::Store(StoreError::unavailable(format!(
            "claim of `{}` kept racing with concurrent changes",
            req.key
        ))))
    }

    /// Stores the result of `owner`'s claim in the caller's transaction; false
    /// when the row is not (or no longer) that claim.
    pub(crate) async fn complete(
        &self,
        conn: &mut AnyConn<'_>,
        key: &str,
        owner: Owner,
        payload: &[u8],
        ttl: Duration,
    ) -> Result<bool, TxFail> {
        let o = owner.to_bytes();
        let args = crate::store::sql::bind::complete_args(payload, ttl, key, &o);
        self.sent.one();
        let n = conn.execute(&self.sql.complete.text(), &args).await?;
        Ok(n > 0)
    }

    /// Removes `owner`'s unfinished claim of `key` in the caller's transaction:
    /// the compensating statement of a call made without a savepoint.
    pub(crate) async fn release(
        &self,
        conn: &mut AnyConn<'_>,
        key: &str,
        owner: Owner,
    ) -> Result<(), sqlx::Error> {
        let o = owner.to_bytes();
        let args = [Arg::Text(key), Arg::Bytes(&o)];
        self.sent.one();
        conn.execute(&self.sql.release.text(), &args)
            .await
            .map(drop)
    }
}
