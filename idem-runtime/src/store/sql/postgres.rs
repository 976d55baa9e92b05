//! PostgreSQL: fences from a sequence; the claim is one statement (upsert of a
//! missing or expired key, else a read of the live row).

use std::time::Duration;

use sqlx::Row;
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};

use super::ddl::{Statements, Stmt};
use super::store::{Arg, Pool, Sent, SqlStore, bind};
use super::{CLAIM_ROUNDS, RawRow, TableNames, map_err, micros, retry_conflicts};
use crate::outcome::Fence;
use crate::store::{Claim, ClaimRequest, StoreError, Warning};

impl SqlStore {
    /// A PostgreSQL store on `pool` with the default table names.
    pub fn postgres(pool: PgPool) -> Self {
        Self::from_pool(Pool::Postgres(pool), TableNames::default())
    }

    /// Connects a pool of up to 16 connections (5 s acquire timeout, no ping on
    /// acquire: see the module docs). Does not create tables.
    pub async fn connect_postgres(url: &str) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(Duration::from_secs(5))
            .test_before_acquire(false)
            .connect(url)
            .await
            .map_err(map_err)?;
        Ok(Self::postgres(pool))
    }
}

pub(super) async fn execute(
    pool: &PgPool,
    sent: &Sent,
    stmt: &Stmt,
    args: &[Arg<'_>],
) -> Result<u64, sqlx::Error> {
    Ok(bind(sent, stmt, args).execute(pool).await?.rows_affected())
}

pub(super) async fn exists(
    pool: &PgPool,
    sent: &Sent,
    stmt: &Stmt,
    args: &[Arg<'_>],
) -> Result<bool, sqlx::Error> {
    Ok(bind(sent, stmt, args).fetch_optional(pool).await?.is_some())
}

pub(super) async fn fetch(
    pool: &PgPool,
    sent: &Sent,
    stmt: &Stmt,
    args: &[Arg<'_>],
) -> Result<Option<RawRow>, StoreError> {
    let row = bind(sent, stmt, args)
        .fetch_optional(pool)
        .await
        .map_err(map_err)?;
    row.as_ref().map(raw).transpose()
}

fn raw(row: &PgRow) -> Result<RawRow, StoreError> {
    Ok(RawRow {
        state: i64::from(row.try_get::<i16, _>("state").map_err(map_err)?),
        owner: row.try_get("owner").map_err(map_err)?,
        fence: row.try_get("fence").map_err(map_err)?,
        fingerprint: row.try_get("fingerprint").map_err(map_err)?,
        payload: row.try_get("payload").map_err(map_err)?,
        remaining_us: row.try_get("remaining_us").map_err(map_err)?,
    })
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
                return Err(StoreError::Codec(format!(
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
    Err(StoreError::Unavailable(format!(
        "claim of `{}` kept racing with concurrent changes",
        req.key
    )))
}
/// Nothing to warn about beyond what the probes check.
pub(super) async fn warnings(_pool: &PgPool) -> Result<Vec<Warning>, StoreError> {
    Ok(Vec::new())
}
