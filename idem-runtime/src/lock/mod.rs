//! The distributed lock: `idem.lock(scene, parts)…run(body)` and
//! `#[idem::distributed_lock]`.
//!
//! A lock is a claim that is never completed: it is taken with the store's
//! owner-checked `claim` when its body gets a fence (`run`; one script on
//! Redis, where the key, its fence and the lock are one value in one slot), or
//! `claim_unfenced` when it does not (`run_unfenced`; one native
//! `SET … NX PX … GET` on Redis), kept alive by the execution layer's watchdog
//! (`Exec::hold_tracked` in `exec/`: renewal every `lease / 3` counted
//! from the send instant, up to `max_hold`), and given up with the owner-checked
//! `release` (one script). So the lock works on every store the guard does
//! (memory, Redis, Redis Cluster, the SQL stores, where it is a lease row in the
//! records table, not an advisory lock: it survives connection loss and needs no
//! session), and it hands out the same fences: never backwards per key, across
//! expiry, `FLUSHALL` and failover, whatever unfenced acquisitions came between.
//!
//! - [`grant`]: what the body receives: [`LockGrant`] (the lease and its
//!   fence) from [`Lock::run`], [`LockLease`] (`is_valid()`) from
//!   [`Lock::run_unfenced`];
//! - `acquire`: the protocol (claim or wait, hold, release);
//! - [`fenced`]: the fenced SQL write (`… AND fence <= $f`) and its typed result.
//!
//! What a lock cannot do is stop a body whose lease lapsed (a paused process, a
//! partition): it keeps running. Only writes that carry the fence, or a unique
//! constraint, are protected then; `is_valid()` tells the body, but checking it
//! and then writing is still a race, which the fenced write closes.

use std::future::Future;
use std::time::Duration;

use crate::error::Error;
use crate::handle::Idem;
use crate::key::{Key, KeyPart};

mod acquire;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod fenced;
pub mod grant;

pub(crate) use acquire::Acquire;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use fenced::{FencedUpdate, FencedWrite};
pub use grant::{LockGrant, LockLease};

use crate::policy::LockPolicy;

/// A lock being configured: `idem.lock(scene, parts)...run(body)`.
///
/// ```
/// # use idem::{Idem, store::memory::MemoryStore};
/// # use std::time::Duration;
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), idem::Error> {
/// let idem = Idem::builder().store(MemoryStore::new()).namespace("shop").build()?;
/// let left = idem
///     .lock("lock:deduct:order", &[&"A-1001"])
///     .lease(Duration::from_secs(3))
///     .wait(Duration::from_millis(500))
///     .run(|grant| async move {
///         // Write `grant.fence()` with the row: `… WHERE fence <= $fence`.
///         assert!(grant.is_valid());
///         Ok::<_, idem::Error>(41)
///     })
///     .await?;
/// assert_eq!(left, 41);
/// # Ok(()) }
/// ```
#[must_use = "a lock does nothing until `.run(...)` is awaited"]
#[derive(Debug)]
pub struct Lock<'h> {
    idem: &'h Idem,
    key: Key,
    policy: LockPolicy,
}

impl Idem {
    /// Starts a distributed lock on `scene` and the `parts`, all escaped (the
    /// same key builder as [`Idem::guard`]; keep lock scenes apart from guard
    /// scenes, e.g. with a `lock:` prefix).
    pub fn lock(&self, scene: &str, parts: &[&(dyn KeyPart + Sync)]) -> Lock<'_> {
        // The configuration names scenes as written, not as escaped in keys.
        Lock {
            idem: self,
            policy: self.settings().lock_policy(scene),
            key: self.key(scene, parts),
        }
    }

    /// Starts a lock on a key rendered by [`Idem::key`].
    pub fn lock_key(&self, key: Key) -> Lock<'_> {
        Lock {
            idem: self,
            policy: self.settings().lock_policy(&key.scene_as_written()),
            key,
        }
    }
}

impl Lock<'_> {
    /// The rendered key.
    pub fn key(&self) -> &Key {
        &self.key
    }
    /// Life of the lock without renewal (default 30 s).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.policy.lease = lease;
        self
    }
    /// How long to wait for a busy lock (default 5 s, or the lease if shorter;
    /// zero tries once).
    pub fn wait(mut self, wait: Duration) -> Self {
        self.policy.wait = Some(wait);
        self
    }
    /// Upper bound on renewal for a hung body (default 20 × lease).
    pub fn max_hold(mut self, d: Duration) -> Self {
        self.policy.max_hold = Some(d);
        self
    }
    /// Replaces all settings at once.
    pub fn policy(mut self, policy: LockPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Takes the lock (waiting up to `wait`, then `Error::LockBusy`), runs `body`
    /// while the watchdog renews the lease, and releases the lock (owner-checked)
    /// when the body ends. If this future is dropped, renewal stops with it and
    /// the lock is released at once (in the background, owner-checked; if the store
    /// does not answer it lapses within one lease). Tasks the body spawned are not
    /// covered by the lock once the body's future is gone.
    ///
    /// The body gets a [`LockGrant`]: the lease and this acquisition's fence,
    /// larger than the fence of every earlier fenced acquisition of the key. On
    /// Redis the claim is then a script reading the server clock (about twice a
    /// native command's server cost): a body that writes no fence should call
    /// [`run_unfenced`](Self::run_unfenced).
    pub async fn run<T, E, B, Fut>(self, body: B) -> Result<T, E>
    where
        T: Send,
        E: From<Error> + Send,
        B: FnOnce(LockGrant) -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        self.acquire(true, body).await
    }

    /// [`run`](Self::run) for a body that writes no fence: it gets the
    /// [`LockLease`] (`is_valid()`) and no fence, so the store may take the
    /// lock with its cheapest command (Redis: one native `SET … NX PX … GET`
    /// instead of the script that stamps a fence), as `#[distributed_lock]`
    /// does for a function without an `idem::Fence` parameter. Mutual
    /// exclusion, renewal and release are `run`'s; fenced acquisitions of the
    /// key still get fences larger than every earlier one.
    ///
    /// ```
    /// # use idem::{Idem, store::memory::MemoryStore};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), idem::Error> {
    /// let idem = Idem::builder().store(MemoryStore::new()).namespace("shop").build()?;
    /// let sent = idem
    ///     .lock("lock:report", &[&"2026-12"])
    ///     .run_unfenced(|lease| async move {
    ///         // One report job at a time; nothing here writes a fence.
    ///         Ok::<_, idem::Error>(lease.is_valid())
    ///     })
    ///     .await?;
    /// assert!(sent);
    /// # Ok(()) }
    /// ```
    pub async fn run_unfenced<T, E, B, Fut>(self, body: B) -> Result<T, E>
    where
        T: Send,
        E: From<Error> + Send,
        B: FnOnce(LockLease) -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        self.acquire(false, move |grant: LockGrant| body(grant.lease))
            .await
    }

    async fn acquire<T, E, B, Fut>(self, fenced: bool, body: B) -> Result<T, E>
    where
        E: From<Error>,
        B: FnOnce(LockGrant) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        if let Err(e) = self
            .idem
            .scenes()
            .register_key(&self.key, self.idem.key_namespace())
        {
            return Err(e.into());
        }
        Acquire {
            idem: self.idem,
            key: &self.key,
            policy: &self.policy,
            fenced,
        }
        .execute(body)
        .await
    }
}
