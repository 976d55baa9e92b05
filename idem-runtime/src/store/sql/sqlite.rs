//! SQLite: one writer at a time, so the claim is a short `BEGIN IMMEDIATE`
//! transaction (a one-row fence counter, then an upsert of a missing or expired
//! key), preceded by a plain read that lets duplicates and waiters skip the write
//! lock. WAL mode keeps those reads from blocking behind the writer.

use std::sync::Arc;

use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use super::CLAIM_ROUNDS;
use super::bind::{Arg, Sent, bind};
use super::ddl::Statements;
use super::errors::map_err;
use super::names::TableNames;
use super::pool::Lite;
use super::row::RawRow;
use super::stmt::Stmt;
use crate::outcome::Fence;
use crate::sql_kernel::{detached, micros, retry_conflicts};
use crate::store::{Claim, ClaimRequest, Owner, StoreError, Warning};

driver_calls! {
    pool: Lite,
    row: SqliteRow,
    state: i64,
    sqlx_pool: |lite| &lite.pool,
    write_turn: |lite| lite.writer.lock().await,
}

pub(super) async fn claim(
    lite: &Lite,
    sql: &Statements,
    sent: &Sent,
    req: ClaimRequest<'_>,
) -> Result<Claim, StoreError> {
    let live = [Arg::Text(req.key)];
    if let Some(row) = fetch(lite, sent, &sql.select_live, &live).await? {
        return row.into_claim(req.owner);
    }
    let t = Arc::new(Take {
        lite: lite.clone(),
        sent: sent.clone(),
        next_fence: sql.next_fence.clone(),
        claim: sql.claim.clone(),
        select_live: sql.select_live.clone(),
        key: req.key.to_owned(),
        owner: req.owner,
        fingerprint: req.fingerprint.0,
        lease_us: micros(req.lease),
    });
    for _ in 0..CLAIM_ROUNDS {
        let answer = retry_conflicts(|| detached(take(Arc::clone(&t))))
            .await
            .map_err(map_err)?;
        if let Some(answer) = answer {
            return answer;
        }
    }
    Err(StoreError::unavailable(format!(
        "claim of `{}` kept racing with its own expiry",
        req.key
    )))
}

/// What the write half needs, owned, to run detached (see [`detached`]).
struct Take {
    lite: Lite,
    sent: Sent,
    next_fence: Stmt,
    claim: Stmt,
    select_live: Stmt,
    key: String,
    owner: Owner,
    fingerprint: [u8; 16],
    lease_us: i64,
}

/// The write half, in `BEGIN IMMEDIATE` and this process's writer turn: no other
/// writer changes the row between the upsert and the read that follows it. Only
/// the clock moves: a row that was live for the upsert may have expired for the
/// read (`None`: try again).
async fn take(t: Arc<Take>) -> Result<Option<Result<Claim, StoreError>>, sqlx::Error> {
    let _turn = Arc::clone(&t.lite.writer).lock_owned().await;
    t.sent.one(); // BEGIN IMMEDIATE
    let mut tx = t.lite.pool.begin_with("BEGIN IMMEDIATE").await?;
    let req = ClaimRequest {
        key: &t.key,
        owner: t.owner,
        fingerprint: crate::fingerprint::Fingerprint(t.fingerprint),
        lease: std::time::Duration::ZERO,
    };
    let answer = take_on(
        &mut tx,
        &t.sent,
        &t.next_fence,
        &t.claim,
        &t.select_live,
        req,
        t.lease_us,
    )
    .await?
    .map(|a| a.map(|(claim, _)| claim));
    t.sent.one(); // COMMIT
    tx.commit().await?;
    Ok(answer)
}

/// The write half's statements, on a connection inside a write transaction
/// (the store's own `BEGIN IMMEDIATE`, or the caller's for the transactional
/// guard): the next fence, the upsert of a missing or expired key, and, when a
/// live row won, that row (`None`: it expired between the two; ask again).
/// `lease_us` replaces `req.lease`, which is ignored.
pub(crate) async fn take_on(
    conn: &mut sqlx::SqliteConnection,
    sent: &Sent,
    next_fence: &Stmt,
    claim: &Stmt,
    select_live: &Stmt,
    req: ClaimRequest<'_>,
    lease_us: i64,
) -> Result<Option<Result<(Claim, std::time::Duration), StoreError>>, sqlx::Error> {
    let fence: i64 = bind(sent, next_fence, &[])
        .fetch_one(&mut *conn)
        .await?
        .try_get(0)?;
    let owner = req.owner.to_bytes();
    let args = [
        Arg::Text(req.key),
        Arg::Bytes(&owner),
        Arg::Int(fence),
        Arg::Bytes(&req.fingerprint.0),
        Arg::Int(lease_us),
    ];
    let claimed = bind(sent, claim, &args).fetch_optional(&mut *conn).await?;
    Ok(match claimed {
        Some(_) => Some(Ok((
            Claim::Claimed {
                fence: Fence::new(fence as u64),
            },
            std::time::Duration::ZERO,
        ))),
        None => bind(sent, select_live, &[Arg::Text(req.key)])
            .fetch_optional(&mut *conn)
            .await?
            .map(|row| raw(&row).and_then(|r| r.into_answer(req.owner))),
    })
}

/// A database not in WAL mode makes readers and the writer block each other.
pub(super) async fn warnings(lite: &Lite, _names: &TableNames) -> Result<Vec<Warning>, StoreError> {
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&lite.pool)
        .await
        .map_err(map_err)?;
    Ok(if mode.eq_ignore_ascii_case("wal") {
        Vec::new()
    } else {
        vec![Warning(format!(
            "SQLite journal_mode is `{mode}`, not `wal`: claims and reads will block each other"
        ))]
    })
}
