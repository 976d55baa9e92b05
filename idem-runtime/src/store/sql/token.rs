//! One-time tokens in a SQL database: [`TokenStore`] for [`SqlStore`], over
//! one table created by `migrate()` (its text in `token_sql.rs`).
//!
//! Every change is one owner-checked statement on the database clock. The
//! take, the whole success path of a consume, is one `UPDATE` that touches the
//! row exactly when the take is the caller's: an issued token it spends, or
//! its own tombstone again (a retried take after a lost reply: `Taken` with
//! the same fence). No row touched is `Invalid`: no live token, or one spent
//! by another owner. The fence comes back with it: `RETURNING` on
//! PostgreSQL and SQLite (in this process's writer turn, like every SQLite
//! write of the store), `LAST_INSERT_ID` in MySQL's OK packet. A `give_back`
//! that changes nothing reads whether a live row is left, as a record's
//! `release` does: gone means applied (a retry, or a token that expired
//! meanwhile).

use std::time::Duration;

#[cfg(any(feature = "postgres", feature = "sqlite"))]
use sqlx::Row;

use super::bind::{Arg, bind};
use super::errors::map_err;
use super::key::check_key;
use super::pool::Pool;
use super::store::SqlStore;
use crate::fence::Fence;
use crate::sql_kernel::{micros, retry_conflicts};
use crate::store::token::{TokenStore, TokenTake};
use crate::store::{BoxFuture, Owned, Owner, StoreError};

/// A fence the store wrote is positive; anything else is not idem's row.
fn fence_of(f: i64) -> Result<Fence, StoreError> {
    u64::try_from(f)
        .ok()
        .filter(|f| *f > 0)
        .map(Fence::new)
        .ok_or_else(|| StoreError::codec(format!("token fence {f} is not positive")))
}

impl SqlStore {
    /// The take's one statement; `None`: it touched no row (`Invalid`).
    async fn take_once(&self, key: &str, owner: Owner) -> Result<Option<i64>, StoreError> {
        let o = owner.to_bytes();
        let (sent, stmt) = (&self.sent, &self.tok.take);
        let fence = match &self.pool {
            #[cfg(feature = "postgres")]
            Pool::Postgres(p) => {
                let args = [Arg::Text(key), Arg::Bytes(&o)];
                retry_conflicts(|| async {
                    match bind(sent, stmt, &args).fetch_optional(p).await? {
                        Some(r) => Ok(Some(r.try_get::<i64, _>("fence")?)),
                        None => Ok(None),
                    }
                })
                .await
            }
            #[cfg(feature = "mysql")]
            Pool::MySql(p) => {
                let args = [Arg::Bytes(&o), Arg::Text(key), Arg::Bytes(&o)];
                retry_conflicts(|| bind(sent, stmt, &args).execute(p))
                    .await
                    .map(|r| {
                        (r.rows_affected() > 0)
                            .then(|| i64::try_from(r.last_insert_id()).unwrap_or(0))
                    })
            }
            #[cfg(feature = "sqlite")]
            Pool::Sqlite(lite) => {
                let args = [Arg::Text(key), Arg::Bytes(&o)];
                retry_conflicts(|| async {
                    let _turn = lite.writer.lock().await;
                    match bind(sent, stmt, &args).fetch_optional(&lite.pool).await? {
                        Some(r) => Ok(Some(r.try_get::<i64, _>("fence")?)),
                        None => Ok(None),
                    }
                })
                .await
            }
        };
        fence.map_err(map_err)
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
    ) -> BoxFuture<'a, Result<TokenTake, StoreError>> {
        Box::pin(async move {
            check_key(self.dialect, key)?;
            // As a claim (`claim.rs`): a take that may still apply keeps the
            // key's turn until it answers, so a dropped caller's undo (a take
            // again, then a give-back) cannot overtake it and leave the token
            // spent.
            let turn = self.locks.lock(key).await;
            let (store, key) = (self.clone(), key.to_owned());
            super::claim::finish_in_turn("take", async move {
                let _turn = turn;
                match store.take_once(&key, owner).await? {
                    Some(f) => Ok(TokenTake::Taken {
                        fence: fence_of(f)?,
                    }),
                    None => Ok(TokenTake::Invalid),
                }
            })
            .await
        })
    }

    fn give_back<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(self.owned_change(&self.tok.give_back, &self.tok.live, key, owner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_is_positive() {
        assert_eq!(fence_of(7).unwrap(), Fence::new(7));
        assert!(fence_of(0).is_err());
        assert!(fence_of(-3).is_err());
    }
}
