//! MySQL 8 / MariaDB 10.5+: fences from a table of [`FENCE_SLOTS`] counters; the
//! claim reads first (duplicates and waiters cost one `SELECT`), and only a
//! missing or expired key pays for a fence and an `INSERT … ON DUPLICATE KEY
//! UPDATE`, in one transaction. Deadlocks (1213), which MariaDB reports between concurrent upserts of
//! one key, are retried inside the store.

use std::sync::Arc;

use sqlx::Row;
use sqlx::mysql::{MySqlPool, MySqlRow};

use super::CLAIM_ROUNDS;
use super::bind::{Arg, Sent, bind};
use super::ddl::Statements;
use super::errors::map_err;
use super::names::TableNames;
use super::row::RawRow;
use super::stmt::Stmt;
use crate::outcome::Fence;
use crate::sql_kernel::{detached, micros, retry_conflicts};
use crate::store::{Claim, ClaimRequest, StoreError, Warning};

/// Fence counters. A key always hashes to the same slot, so its fences increase;
/// several slots keep unrelated keys from queueing on one row lock.
const FENCE_SLOTS: u16 = 64;

driver_calls! {
    pool: MySqlPool,
    row: MySqlRow,
    state: i16,
    sqlx_pool: |pool| pool,
    write_turn: |_pool| (),
}

fn slot(key: &str) -> i64 {
    let h = blake3::hash(key.as_bytes());
    let b = h.as_bytes();
    i64::from(u16::from_le_bytes([b[0], b[1]]) % FENCE_SLOTS)
}

/// What the write half needs, owned, to run detached (see [`detached`]).
struct Take {
    pool: MySqlPool,
    sent: Sent,
    next_fence: Stmt,
    claim: Stmt,
    key: String,
    owner: [u8; 16],
    fingerprint: [u8; 16],
    lease_us: i64,
}

/// The write half, one transaction so it costs one commit (one log flush):
/// the next fence of the key's slot, then the upsert. Returns the fence when the
/// key is now ours. Both steps lock the slot row first, then the record row, so
/// concurrent claims cannot deadlock each other through this transaction.
async fn take(t: Arc<Take>) -> Result<Option<i64>, sqlx::Error> {
    t.sent.one(); // BEGIN
    let mut tx = t.pool.begin().await?;
    let fence = take_on(
        &mut tx,
        &t.sent,
        &t.next_fence,
        &t.claim,
        TakeArgs {
            key: &t.key,
            owner: &t.owner,
            fingerprint: &t.fingerprint,
            lease_us: t.lease_us,
        },
    )
    .await?;
    t.sent.one(); // COMMIT
    tx.commit().await?;
    Ok(fence)
}

/// The claim's binds, borrowed.
pub(crate) struct TakeArgs<'a> {
    pub(crate) key: &'a str,
    pub(crate) owner: &'a [u8; 16],
    pub(crate) fingerprint: &'a [u8; 16],
    pub(crate) lease_us: i64,
}

/// The write half's statements inside the store's own transaction: the slot's
/// next fence, then the upsert. The fence when the key is now ours. (Never in
/// the caller's transaction: the slot row would stay locked until its commit;
/// see [`take_in_tx`].)
async fn take_on(
    conn: &mut sqlx::MySqlConnection,
    sent: &Sent,
    next_fence: &Stmt,
    claim: &Stmt,
    a: TakeArgs<'_>,
) -> Result<Option<i64>, sqlx::Error> {
    let r = bind(sent, next_fence, &[Arg::Int(slot(a.key))])
        .execute(&mut *conn)
        .await?;
    let fence = i64::try_from(r.last_insert_id()).unwrap_or(0);
    if fence <= 0 {
        return Err(sqlx::Error::Protocol(format!(
            "fence counter returned {}",
            r.last_insert_id()
        )));
    }
    let args = [
        Arg::Text(a.key),
        Arg::Bytes(a.owner),
        Arg::Int(fence),
        Arg::Bytes(a.fingerprint),
        Arg::Int(a.lease_us),
    ];
    upsert(conn, sent, claim, &args).await
}

/// The transactional guard's claim in the caller's transaction
/// ([`mysql_claim_in_tx`](super::mysql_sql::mysql_claim_in_tx)): the upsert
/// alone, its fence from the database clock, so no fence slot stays locked
/// until the caller's commit. The fence when the key is now ours.
pub(crate) async fn take_in_tx(
    conn: &mut sqlx::MySqlConnection,
    sent: &Sent,
    claim: &Stmt,
    a: TakeArgs<'_>,
) -> Result<Option<i64>, sqlx::Error> {
    let args = [
        Arg::Text(a.key),
        Arg::Bytes(a.owner),
        Arg::Bytes(a.fingerprint),
        Arg::Int(a.lease_us),
    ];
    upsert(conn, sent, claim, &args).await
}

/// Runs a claim upsert: its last-insert-id is the fence the row now holds
/// when the statement took the key, 0 when a live row stayed (see
/// `mysql_sql.rs`).
async fn upsert(
    conn: &mut sqlx::MySqlConnection,
    sent: &Sent,
    claim: &Stmt,
    args: &[Arg<'_>],
) -> Result<Option<i64>, sqlx::Error> {
    let r = bind(sent, claim, args).execute(&mut *conn).await?;
    match r.last_insert_id() {
        0 => Ok(None),
        id => i64::try_from(id)
            .map(Some)
            .map_err(|_| sqlx::Error::Protocol(format!("claim returned fence {id}"))),
    }
}

pub(super) async fn claim(
    pool: &MySqlPool,
    sql: &Statements,
    sent: &Sent,
    req: ClaimRequest<'_>,
) -> Result<Claim, StoreError> {
    for _ in 0..CLAIM_ROUNDS {
        let live = [Arg::Text(req.key)];
        if let Some(row) = fetch(pool, sent, &sql.select_live, &live).await? {
            return row.into_claim(req.owner);
        }
        let t = Arc::new(Take {
            pool: pool.clone(),
            sent: sent.clone(),
            next_fence: sql.next_fence.clone(),
            claim: sql.claim.clone(),
            key: req.key.to_owned(),
            owner: req.owner.to_bytes(),
            fingerprint: req.fingerprint.0,
            lease_us: micros(req.lease),
        });
        if let Some(fence) = retry_conflicts(|| detached(take(Arc::clone(&t))))
            .await
            .map_err(map_err)?
        {
            return Ok(Claim::Claimed {
                fence: Fence::new(fence as u64),
            });
        }
        // A live row won: read it on the next round.
    }
    Err(StoreError::unavailable(format!(
        "claim of `{}` kept racing with concurrent changes",
        req.key
    )))
}

/// Nothing to warn about beyond what the probes check.
pub(super) async fn warnings(
    _pool: &MySqlPool,
    _names: &TableNames,
) -> Result<Vec<Warning>, StoreError> {
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    #[test]
    fn slots_are_stable_and_in_range() {
        let s = super::slot("shop:order:1");
        assert_eq!(s, super::slot("shop:order:1"));
        assert!((0..i64::from(super::FENCE_SLOTS)).contains(&s));
    }
}
