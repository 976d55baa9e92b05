//! PostgreSQL: fences from a sequence; the claim is one statement (upsert of a
//! missing or expired key, else a read of the live row).

use sqlx::Row;
use sqlx::postgres::{PgPool, PgRow};

use super::CLAIM_ROUNDS;
use super::bind::{Arg, Sent, bind};
use super::ddl::{Statements, Stmt};
use super::errors::map_err;
use super::names::TableNames;
use super::row::RawRow;
use crate::db::{micros, retry_conflicts};
use crate::outcome::Fence;
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
    let args = [
        Arg::Text(req.key),
        Arg::Bytes(&owner),
        Arg::Bytes(&req.fingerprint.0),
        Arg::Int(micros(req.lease)),
    ];
    for _ in 0..CLAIM_ROUNDS {
        let row = retry_conflicts(|| bind(sent, &sql.claim, &args).fetch_optional(pool))
            .await
            .map_err(map_err)?;
        // No row: the conflicting row is newer than this statement's snapshot.
        let Some(row) = row else { continue };
        let claimed: bool = row.try_get("claimed").map_err(map_err)?;
        let raw = raw(&row)?;
        if claimed {
            if raw.fence <= 0 {
                return Err(StoreError::codec(format!(
                    "sequence gave fence {}",
                    raw.fence
                )));
            }
            return Ok(Claim::Claimed {
                fence: Fence::new(raw.fence as u64),
            });
        }
        // The snapshot may show a row that expired meanwhile: ask again.
        if raw.remaining_us > 0 {
            return raw.into_claim(req.owner);
        }
    }
    Err(StoreError::unavailable(format!(
        "claim of `{}` kept racing with concurrent changes",
        req.key
    )))
}

/// Nothing to warn about beyond what the probes check.
pub(super) async fn warnings(
    _pool: &PgPool,
    _names: &TableNames,
) -> Result<Vec<Warning>, StoreError> {
    Ok(Vec::new())
}
