//! PostgreSQL: fences from a sequence; the claim is one statement (upsert of a
//! missing or expired key, else a read of the live row).

use sqlx::Row;
use sqlx::postgres::{PgPool, PgRow};

use super::CLAIM_ROUNDS;
use super::bind::{Arg, Sent, bind};
use super::ddl::Statements;
use super::errors::map_err;
use super::names::TableNames;
use super::row::RawRow;
use super::stmt::Stmt;
use crate::outcome::Fence;
use crate::sql_kernel::{Dialect, micros, retry_conflicts};
use crate::store::{Claim, ClaimRequest, StoreError, Warning};

driver_calls! {
    pool: PgPool,
    row: PgRow,
    state: i16,
    sqlx_pool: |pool| pool,
    write_turn: |_pool| (),
}

pub(super) async fn claim(
    pool: &PgPool,
    sql: &Statements,
    sent: &Sent,
    req: ClaimRequest<'_>,
) -> Result<Claim, StoreError> {
    let owner = req.owner.to_bytes();
    let args = claim_args(&req, &owner);
    for _ in 0..CLAIM_ROUNDS {
        let row = retry_conflicts(|| bind(sent, &sql.claim, &args).fetch_optional(pool))
            .await
            .map_err(map_err)?;
        if let Some((answer, _)) = answer(row, req.owner)? {
            return Ok(answer);
        }
    }
    Err(StoreError::unavailable(format!(
        "claim of `{}` kept racing with concurrent changes",
        req.key
    )))
}

/// The claim statement's binds: key, owner, fingerprint, lease µs.
pub(crate) fn claim_args<'a>(req: &'a ClaimRequest<'a>, owner: &'a [u8; 16]) -> [Arg<'a>; 4] {
    [
        Arg::Text(req.key),
        Arg::Bytes(owner),
        Arg::Bytes(&req.fingerprint.0),
        Arg::Int(micros(req.lease)),
    ]
}

/// What the claim statement's row says; `None`: ask again (the conflicting row
/// is newer than the statement's snapshot, or it expired meanwhile).
pub(crate) fn answer(
    row: Option<PgRow>,
    me: crate::store::Owner,
) -> Result<Option<(Claim, std::time::Duration)>, StoreError> {
    let Some(row) = row else { return Ok(None) };
    let claimed: bool = row.try_get("claimed").map_err(map_err)?;
    let raw = raw(&row)?;
    if claimed {
        if raw.fence <= 0 {
            return Err(StoreError::codec(format!(
                "sequence gave fence {}",
                raw.fence
            )));
        }
        let claim = Claim::Claimed {
            fence: Fence::new(raw.fence as u64),
        };
        return Ok(Some((claim, std::time::Duration::ZERO)));
    }
    // The snapshot may show a row that expired meanwhile: ask again.
    if raw.remaining_us > 0 {
        return raw.into_answer(me).map(Some);
    }
    Ok(None)
}

/// Refuses a fence sequence with `CACHE > 1`: each connection then reserves a
/// block of values, and fences handed out by concurrent connections interleave
/// out of order, so a key's fence could go backwards. `to_regclass` resolves
/// the name the way the store's statements do (schema, else `search_path`); a
/// missing sequence is the probes' business.
pub(super) async fn warnings(
    pool: &PgPool,
    names: &TableNames,
) -> Result<Vec<Warning>, StoreError> {
    let seq = names.fences_q(Dialect::Postgres);
    let cache: Option<i64> = sqlx::query_scalar(
        "SELECT seqcache FROM pg_catalog.pg_sequence WHERE seqrelid = to_regclass($1)",
    )
    .bind(&seq)
    .fetch_optional(pool)
    .await
    .map_err(map_err)?;
    match cache {
        Some(n) if n > 1 => Err(StoreError::config(format!(
            "fence sequence `{seq}` has CACHE {n}: each connection reserves a block of {n} fences, \
             so fences of concurrent connections go backwards; run `ALTER SEQUENCE {seq} CACHE 1`"
        ))),
        _ => Ok(Vec::new()),
    }
}
