//! [`Durability`]: whether a claim and a complete wait for replicas (`WAIT`)
//! before the store trusts them.
//!
//! Redis replicates asynchronously: a write the primary acknowledged can be lost
//! when a replica that never received it is promoted. With
//! [`Durability::Replicated`], the store sends `WAIT <replicas> <timeout>` on the
//! connection that carried the write, right after a claim that took the key and
//! after a complete that applied. `WAIT` waits for every write that connection
//! sent up to then (other callers' writes on the same multiplexed connection
//! included), so it can only wait longer than needed, never count a write that
//! was not sent. A duplicate that finds a finished record writes nothing and
//! sends no `WAIT`.
//!
//! - A claim acknowledged by fewer replicas is not trusted: the store answers
//!   `StoreError::Unavailable` caused by [`Unreplicated`], the guard treats the
//!   call as an outage (its claim is released as the call fails, or kept while
//!   a degraded body runs and settled after it), and the circuit breaker
//!   counts it.
//! - A complete acknowledged by fewer replicas still returns the body's result;
//!   it is counted as `idem_store_unreplicated_total{store,op="complete"}`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redis::aio::ConnectionLike;

use super::codec::{KeyLayout, millis};
use super::scripts::{map_err, unexpected};
use crate::store::{StoreError, Unreplicated};

/// How many replicas must hold a claim or a result before the store trusts it.
///
/// ```no_run
/// # async fn demo() -> Result<(), idem::store::StoreError> {
/// use std::time::Duration;
/// use idem::store::redis::{Durability, RedisStore};
/// let store = RedisStore::builder("redis://127.0.0.1:6379")
///     .durability(Durability::Replicated { replicas: 1, timeout: Duration::from_millis(100) })
///     .connect()
///     .await?;
/// # drop(store); Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Durability {
    /// The primary's acknowledgement is enough (the default). A failover to a
    /// replica that missed the write loses it.
    #[default]
    Primary,
    /// After a claim and after a complete, `WAIT replicas timeout` on the same
    /// connection. Keep `timeout` well below the guard's operation budget
    /// (`op_timeout`, default 1 s): a `WAIT` holds its connection's later
    /// commands until it answers.
    Replicated {
        /// Replicas that must acknowledge (at least 1).
        replicas: u32,
        /// The longest wait for them (at least 1 ms).
        timeout: Duration,
    },
}

impl Durability {
    /// Refuses a setting `WAIT` cannot carry out: no replicas to wait for, or a
    /// zero timeout (which `WAIT` reads as "forever").
    pub(super) fn check(&self) -> Result<(), StoreError> {
        match *self {
            Durability::Replicated { replicas: 0, .. } => Err(StoreError::config(
                "Durability::Replicated needs at least 1 replica (use Durability::Primary for none)",
            )),
            Durability::Replicated { timeout, .. } if timeout < Duration::from_millis(1) => {
                Err(StoreError::config(
                    "Durability::Replicated needs a timeout of at least 1 ms (WAIT reads 0 as forever)",
                ))
            }
            _ => Ok(()),
        }
    }
}

/// A connection that can send `WAIT` to the server that took a key's write: the
/// connection itself on one server, the slot's master in a cluster.
pub(super) trait Acks: ConnectionLike + Send {
    /// Sends `cmd` (a `WAIT`) where `record` lives.
    fn wait_for<'a>(
        &'a mut self,
        record: &'a [u8],
        cmd: redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value>;
}

/// The store's durability and its count of unreplicated completes.
#[derive(Debug, Default)]
pub(super) struct Replication {
    pub(super) durability: Durability,
    unreplicated: AtomicU64,
}

impl Replication {
    pub(super) fn new(durability: Durability) -> Self {
        Replication {
            durability,
            unreplicated: AtomicU64::new(0),
        }
    }

    /// After a claim that wrote `key`'s record: `Ok` when enough replicas hold
    /// it (or none are asked for), else `Unavailable` (the claim is not trusted).
    pub(super) async fn claimed<C: Acks>(
        &self,
        con: &mut C,
        layout: &KeyLayout,
        key: &str,
    ) -> Result<(), StoreError> {
        let Durability::Replicated { replicas, timeout } = self.durability else {
            return Ok(());
        };
        let acked = wait(con, &layout.record_key(key), replicas, timeout).await?;
        if acked < i64::from(replicas) {
            let why = Unreplicated {
                acknowledged: u32::try_from(acked.max(0)).unwrap_or(0),
                wanted: replicas,
            };
            return Err(StoreError::unavailable(format!(
                "claim {why} within {timeout:?}: not trusted (check the replicas' link to \
                 the primary, or raise the timeout)"
            ))
            .with_source(why));
        }
        Ok(())
    }

    /// After a complete that wrote `key`'s record: counts it when too few
    /// replicas (or none: the `WAIT` failed) acknowledged it. The result stands
    /// either way.
    pub(super) async fn completed<C: Acks>(&self, con: &mut C, layout: &KeyLayout, key: &str) {
        let Durability::Replicated { replicas, timeout } = self.durability else {
            return;
        };
        let record = layout.record_key(key);
        let acked = wait(con, &record, replicas, timeout).await.unwrap_or(0);
        if acked < i64::from(replicas) {
            self.unreplicated.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Unreplicated completes since the last call.
    pub(super) fn take(&self) -> u64 {
        if self.durability == Durability::Primary {
            return 0;
        }
        self.unreplicated.swap(0, Ordering::Relaxed)
    }
}

async fn wait<C: Acks>(
    con: &mut C,
    record: &[u8],
    replicas: u32,
    timeout: Duration,
) -> Result<i64, StoreError> {
    let mut cmd = redis::cmd("WAIT");
    cmd.arg(replicas).arg(millis(timeout).max(1));
    let reply = con.wait_for(record, cmd).await.map_err(map_err)?;
    match reply {
        redis::Value::Int(n) => Ok(n),
        other => Err(unexpected("WAIT", &other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_waits_cannot_keep_are_refused() {
        let zero = Durability::Replicated {
            replicas: 0,
            timeout: Duration::from_millis(10),
        };
        assert!(matches!(zero.check(), Err(StoreError::Config(_))));
        let forever = Durability::Replicated {
            replicas: 1,
            timeout: Duration::ZERO,
        };
        assert!(matches!(forever.check(), Err(StoreError::Config(_))));
        assert!(Durability::Primary.check().is_ok());
    }
}
