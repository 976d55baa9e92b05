//! One-time tokens in a SQL database: [`TokenStore`] for [`SqlStore`], over
//! one table created by `migrate()` (its text in `token_sql.rs`).
//!
//! Every change is one owner-checked statement; only `take` differs per
//! dialect, to learn in the same round trip whether it took the token:
//!
//! - PostgreSQL: one statement, an `UPDATE … RETURNING` beside a read of the
//!   live row from the same snapshot, so busy, invalid and a retried take of
//!   our own all cost one round trip;
//! - MySQL/MariaDB and SQLite: a plain read of the live row first, so the
//!   many waiters polling a busy token cost one lock-free `SELECT` each (on
//!   SQLite an `UPDATE` would queue every poll behind the one writer); only a
//!   takeable row is updated: MySQL's `UPDATE` carries the new fence in
//!   `LAST_INSERT_ID`, SQLite's `UPDATE … RETURNING` runs in this process's
//!   writer turn like every SQLite write of the store.
//!
//! The live row decides a take that did not update: ours already (a retried
//! take after a lost reply: `Taken` with the same fence, never a lost token),
//! another owner's live lease (`Busy`), or no live row (`Invalid`). A row that
//! is takeable but was not taken (another take won between the read and the
//! update, or PostgreSQL's snapshot predates a concurrent take) is asked again.
//! A `give_back` that changes nothing reads whether a live row is left, as a
//! record's `release` does: gone means applied (a retry, or a token that
//! expired while its body ran).

use std::time::Duration;

use sqlx::Row;

use super::CLAIM_ROUNDS;
use super::bind::{Arg, bind};
use super::errors::map_err;
use super::key::check_key;
use super::pool::Pool;
use super::store::SqlStore;
use crate::fence::Fence;
use crate::sql_kernel::{micros, retry_conflicts};
use crate::store::token::{TokenStore, TokenTake};
use crate::store::{BoxFuture, Owned, Owner, StoreError};

/// A live token row as `take` reads it: owner (`None` while issued), the
/// last take's fence, and µs left on the lease (`None` while issued).
type Live = (Option<Vec<u8>>, i64, Option<i64>);

/// The answer a live row gives a take by `me`; `None`: the row is takeable
/// (issued, or another owner's lease lapsed): the update decides.
fn decide(row: Option<Live>, me: Owner) -> Result<Option<TokenTake>, StoreError> {
    let Some((owner, fence, remaining_us)) = row else {
        return Ok(Some(TokenTake::Invalid));
    };
    Ok(match owner {
        Some(o) if o[..] == me.to_bytes()[..] => Some(TokenTake::Taken {
            fence: fence_of(fence)?,
        }),
        Some(_) => remaining_us.filter(|us| *us > 0).map(|us| TokenTake::Busy {
            remaining: Duration::from_micros(us as u64),
        }),
        None => None,
    })
}

/// A fence the store wrote is positive; anything else is not idem's row.
fn fence_of(f: i64) -> Result<Fence, StoreError> {
    u64::try_from(f)
        .ok()
        .filter(|f| *f > 0)
        .map(Fence::new)
        .ok_or_else(|| StoreError::codec(format!("token fence {f} is not positive")))
}

/// The live row's columns, from any dialect's row.
macro_rules! live {
    ($row:expr) => {{
        let r = $row;
        (
            r.try_get::<Option<Vec<u8>>, _>("owner")?,
            r.try_get::<i64, _>("fence")?,
            r.try_get::<Option<i64>, _>("remaining_us")?,
        )
    }};
}

impl SqlStore {
    /// One attempt at a take; `None`: ask again (see the module docs).
    async fn take_once(
        &self,
        key: &str,
        owner: Owner,
        lease_us: i64,
    ) -> Result<Option<TokenTake>, StoreError> {
        let o = owner.to_bytes();
        let (sent, sql) = (&self.sent, &self.tok);
        // The live row, read without a lock (MySQL, SQLite): waiters poll with it.
        #[cfg(any(feature = "mysql", feature = "sqlite"))]
        macro_rules! read_live {
            ($pool:expr) => {
                retry_conflicts(|| async {
                    let read = [Arg::Text(key)];
                    match bind(sent, &sql.read, &read).fetch_optional($pool).await? {
                        Some(r) => Ok(Some(live!(r))),
                        None => Ok(None),
                    }
                })
                .await
                .map_err(map_err)?
            };
        }
        let fence = match &self.pool {
            #[cfg(feature = "postgres")]
            Pool::Postgres(p) => {
                let args = [Arg::Text(key), Arg::Bytes(&o), Arg::Int(lease_us)];
                let row = retry_conflicts(|| async {
                    match bind(sent, &sql.take, &args).fetch_optional(p).await? {
                        Some(r) => Ok(Some((r.try_get::<bool, _>("taken")?, live!(r)))),
                        None => Ok(None),
                    }
                })
                .await
                .map_err(map_err)?;
                match row {
                    Some((true, (_, fence, _))) => Some(fence),
                    other => return decide(other.map(|(_, live)| live), owner),
                }
            }
            #[cfg(feature = "mysql")]
            Pool::MySql(p) => {
                if let Some(answer) = decide(read_live!(p), owner)? {
                    return Ok(Some(answer));
                }
                let args = [
                    Arg::Bytes(&o),
                    Arg::Int(lease_us),
                    Arg::Text(key),
                    Arg::Bytes(&o),
                ];
                let r = retry_conflicts(|| bind(sent, &sql.take, &args).execute(p))
                    .await
                    .map_err(map_err)?;
                (r.rows_affected() > 0).then(|| i64::try_from(r.last_insert_id()).unwrap_or(0))
            }
            #[cfg(feature = "sqlite")]
            Pool::Sqlite(lite) => {
                if let Some(answer) = decide(read_live!(&lite.pool), owner)? {
                    return Ok(Some(answer));
                }
                let args = [Arg::Text(key), Arg::Bytes(&o), Arg::Int(lease_us)];
                retry_conflicts(|| async {
                    let _turn = lite.writer.lock().await;
                    match bind(sent, &sql.take, &args)
                        .fetch_optional(&lite.pool)
                        .await?
                    {
                        Some(r) => Ok(Some(r.try_get::<i64, _>("fence")?)),
                        None => Ok(None),
                    }
                })
                .await
                .map_err(map_err)?
            }
        };
        // `None`: the row was takeable but another take won since; the caller reads again.
        fence
            .map(|f| fence_of(f).map(|fence| TokenTake::Taken { fence }))
            .transpose()
    }

    /// Runs an owner-checked change (binds: key, owner): a record's release, a
    /// token's give-back. When it touches no row, `probe` (binds:
    /// key) decides: nothing left means the change already happened (a retry
    /// after a lost reply, or the row expired), so it is applied as far as this
    /// owner is concerned; a row still there belongs to another owner.
    pub(super) async fn owned_change(
        &self,
        stmt: &super::stmt::Stmt,
        probe: &super::stmt::Stmt,
        key: &str,
        owner: Owner,
    ) -> Result<Owned, StoreError> {
        check_key(self.dialect, key)?;
        let o = owner.to_bytes();
        let n = self
            .execute(stmt, &[Arg::Text(key), Arg::Bytes(&o)])
            .await
            .map_err(map_err)?;
        if n > 0 {
            return Ok(Owned::Applied);
        }
        let left = self
            .exists(probe, &[Arg::Text(key)])
            .await
            .map_err(map_err)?;
        Ok(if left {
            Owned::NotOwner
        } else {
            Owned::Applied
        })
    }
}

impl TokenStore for SqlStore {
    fn issue<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            check_key(self.dialect, key)?;
            let args = [Arg::Text(key), Arg::Int(micros(ttl).max(1))];
            self.execute(&self.tok.issue, &args)
                .await
                .map_err(map_err)?;
            Ok(())
        })
    }

    fn take<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        lease: Duration,
    ) -> BoxFuture<'a, Result<TokenTake, StoreError>> {
        Box::pin(async move {
            check_key(self.dialect, key)?;
            let lease_us = micros(lease).max(1);
            // As a claim (`claim.rs`): a take that may still apply keeps the
            // key's turn until it answers, so a dropped caller's undo (a take
            // again, then a give-back) cannot overtake it and leave the token
            // taken for a lease.
            let turn = self.locks.lock(key).await;
            let (store, key) = (self.clone(), key.to_owned());
            super::claim::finish_in_turn("take", async move {
                let _turn = turn;
                for _ in 0..CLAIM_ROUNDS {
                    if let Some(answer) = store.take_once(&key, owner, lease_us).await? {
                        return Ok(answer);
                    }
                }
                Err(StoreError::unavailable(format!(
                    "take of token `{key}` kept racing with concurrent changes"
                )))
            })
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
            let args = [
                Arg::Int(micros(lease).max(1)),
                Arg::Text(key),
                Arg::Bytes(&o),
            ];
            let n = self
                .execute(&self.tok.renew, &args)
                .await
                .map_err(map_err)?;
            Ok(if n > 0 {
                Owned::Applied
            } else {
                Owned::NotOwner
            })
        })
    }

    fn give_back<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(self.owned_change(&self.tok.give_back, &self.tok.live, key, owner))
    }

    fn revoke<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(async move {
            check_key(self.dialect, key)?;
            self.execute(&self.tok.revoke, &[Arg::Text(key)])
                .await
                .map_err(map_err)?;
            Ok(Owned::Applied)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_row_decides_the_take() {
        let (me, other) = (Owner(1), Owner(2));
        let mine = Some(me.to_bytes().to_vec());
        let theirs = Some(other.to_bytes().to_vec());
        assert_eq!(decide(None, me).unwrap(), Some(TokenTake::Invalid));
        assert_eq!(
            decide(Some((mine.clone(), 7, Some(-5))), me).unwrap(),
            Some(TokenTake::Taken {
                fence: Fence::new(7)
            }),
            "ours, even with a lapsed lease: a retried take keeps its fence"
        );
        assert_eq!(
            decide(Some((theirs.clone(), 7, Some(1_500_000))), me).unwrap(),
            Some(TokenTake::Busy {
                remaining: Duration::from_millis(1500)
            })
        );
        assert_eq!(decide(Some((theirs, 7, Some(0))), me).unwrap(), None);
        assert_eq!(decide(Some((None, 0, None)), me).unwrap(), None);
        assert!(decide(Some((mine, 0, None)), me).is_err());
    }
}
