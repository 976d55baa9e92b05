//! The record store contract every backend implements.
//!
//! The protocol is shaped for Redis first: a claim is *one* call that either takes
//! the key, returns the finished record, or reports the current holder, so a
//! duplicate of a finished call costs one round trip on any backend.
//!
//! Every mutating call carries the caller's [`Owner`] and is idempotent for that
//! owner: a caller whose reply was lost retries the same call and gets the same
//! answer (its own claim is never mistaken for someone else's), while a stale owner
//! (whose lease lapsed and whose key was taken over) changes nothing.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::fingerprint::Fingerprint;
use crate::outcome::Fence;

pub use crate::error::{BoxError, Reason, StoreError, Unreplicated};
pub use catalog::{ConstraintCatalog, ConstraintDef, Engine};
pub use census::{Census, Counted, PurgeReport, PurgeRow, SceneCount};
pub use holder::Holder;
pub use operator::ListFilter;
pub use owner::Owner;
pub use queue::SendQueue;
pub use stored_result::StoredResult;
pub use url::redact_url;

mod arc;
pub mod catalog;
mod census;
pub mod faulty;
mod holder;
pub mod memory;
mod operator;
mod owner;
pub(crate) mod queue;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite")))
)]
pub mod sql;
pub mod state;
mod stored_result;
pub mod token;
mod url;

/// A boxed, sendable future: the store trait stays object-safe (`Arc<dyn Store>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A claim request: take `key` for `lease` unless it is held or finished.
#[derive(Debug, Clone, Copy)]
pub struct ClaimRequest<'a> {
    /// The rendered key.
    pub key: &'a str,
    /// The caller.
    pub owner: Owner,
    /// The request's fingerprint, stored with the claim.
    pub fingerprint: Fingerprint,
    /// How long the claim lives without renewal.
    pub lease: Duration,
}

/// What the holder of a claim knows of it: the fence its claim answered and
/// the fingerprint it was sent with. [`Store::complete_taken`] passes it on,
/// so a store that keeps both in the claim can write the finished record
/// without reading them back first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    /// The fence the claim answered ([`Fence::NONE`] for a claim taken without one).
    pub fence: Fence,
    /// The fingerprint the claim was sent with.
    pub fingerprint: Fingerprint,
}

/// A finished record as a claim or `inspect` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoneRecord {
    /// The fingerprint of the request that produced it.
    pub fingerprint: Fingerprint,
    /// The fence of the claim that produced it.
    pub fence: Fence,
    /// The owner that completed it (so the same owner's retried `complete` is a no-op).
    pub owner: Owner,
    /// The encoded result (see `record`).
    pub payload: Vec<u8>,
}

/// The answer to a claim: exactly one of three things, in one round trip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The caller now holds the key (or already did: a retried claim by the same owner).
    Claimed {
        /// The new fence, larger than any earlier fence of this key.
        fence: Fence,
    },
    /// The key finished within its ttl; here is the result.
    Done(DoneRecord),
    /// Another owner holds the key.
    Busy {
        /// The holder's request fingerprint.
        fingerprint: Fingerprint,
        /// How long until the holder's lease lapses without renewal.
        remaining: Duration,
    },
}

/// The answer to an owner-checked `complete`, `release` or `renew`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owned {
    /// The change applied (or had already applied for this owner).
    Applied,
    /// The key is not held by this owner (lease lapsed and taken over, or gone):
    /// nothing changed.
    NotOwner,
}

/// The state of a key, for operators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordState {
    /// Claimed, body running.
    InProgress {
        /// The holder.
        owner: Owner,
        /// The holder's fence.
        fence: Fence,
        /// The request fingerprint.
        fingerprint: Fingerprint,
        /// Time left on the lease.
        remaining: Duration,
    },
    /// Finished.
    Done {
        /// The record.
        record: DoneRecord,
        /// Time left before the record expires.
        remaining: Duration,
    },
}

/// A warning from [`Store::verify`] (for example, Redis may evict records).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning(pub String);

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A backend that keeps idempotency records.
///
/// Implementations must make `claim`, `complete`, `release` and `renew` atomic per
/// key and owner-checked, and must hand out fences that never go backwards for a
/// key, even after the record is deleted or the store loses its data.
pub trait Store: Send + Sync + 'static {
    /// A short name for metrics and errors (`memory`, `redis`, `postgres`, ...).
    fn name(&self) -> &'static str;

    /// Takes the key, or returns its finished record, or reports the holder.
    fn claim<'a>(&'a self, req: ClaimRequest<'a>) -> BoxFuture<'a, Result<Claim, StoreError>>;

    /// [`claim`](Store::claim) for a caller that never reads the fence of a new
    /// claim (a body without an `idem::Fence` parameter): a new claim may carry
    /// [`Fence::NONE`], which lets a store take the key with a cheaper command
    /// (Redis: one native `SET … NX PX … GET` instead of a script that reads the
    /// server clock). Everything else is `claim`'s contract: one call, owner-checked,
    /// the same owner's retry gets its own claim back, a finished record or the
    /// holder's fingerprint and remaining lease otherwise, and the fences of later
    /// fenced claims of the key still only go up. The default is `claim`.
    fn claim_unfenced<'a>(
        &'a self,
        req: ClaimRequest<'a>,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        self.claim(req)
    }

    /// Stores the result of `owner`'s claim for `ttl`. Retrying after a lost reply
    /// returns `Applied` again.
    fn complete<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        payload: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>>;

    /// [`complete`](Store::complete) for a claim its owner took as `taken`.
    /// A store may use `taken` to write the finished record in one step
    /// (Redis: the script compares the claim's value with the one `taken`
    /// describes and writes the record the client built, instead of
    /// rebuilding it in Lua). The contract is `complete`'s whatever `taken`
    /// says: a fence or fingerprint that does not match the claim costs
    /// only the shortcut. The default is `complete`.
    fn complete_taken<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        taken: Taken,
        payload: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        let _ = taken;
        self.complete(key, owner, payload, ttl)
    }

    /// Drops `owner`'s in-progress claim so a retry can run the body again.
    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>>;

    /// Extends `owner`'s in-progress claim to `lease` from now.
    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>>;

    /// Reads a key's state without changing it.
    fn inspect<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecordState>, StoreError>>;

    /// Deletes a key's record whatever its state. Its fence history is kept.
    fn forget<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Deletes expired records; returns how many. Stores with native expiry return 0.
    fn purge_expired(&self) -> BoxFuture<'_, Result<u64, StoreError>>;

    /// Checks the store is usable and safe: tables exist, no eviction policy.
    fn verify(&self) -> BoxFuture<'_, Result<Vec<Warning>, StoreError>>;

    /// Counts the records of `namespace` by scene and state, for operators
    /// (`idem stats`): reads every key of the namespace, so keep it off the
    /// request path. The default, for stores written elsewhere, refuses.
    fn census<'a>(&'a self, namespace: &'a str) -> BoxFuture<'a, Result<Census, StoreError>> {
        let _ = namespace;
        let e = StoreError::config(format!(
            "the {} store cannot count its records",
            self.name()
        ));
        Box::pin(std::future::ready(Err(e)))
    }

    /// [`purge_expired`](Store::purge_expired) with its counts per table;
    /// with `dry_run`, counts what it would delete and deletes nothing. The
    /// default purges and reports the total as records; it refuses a dry run.
    fn purge_report(&self, dry_run: bool) -> BoxFuture<'_, Result<PurgeReport, StoreError>> {
        Box::pin(async move {
            if dry_run {
                return Err(StoreError::config(format!(
                    "the {} store cannot count what a purge would delete",
                    self.name()
                )));
            }
            let records = self.purge_expired().await?;
            Ok(PurgeReport::default().with("records", records))
        })
    }

    /// The keys of `namespace`'s live records that `filter` selects, with
    /// their states, sorted by key: what `idem ls` lists and `idem inspect
    /// '#hash'` searches. Stores without an index on the state read every
    /// key of the namespace (Redis `SCAN`s): keep it off the request path.
    /// The default, for stores written elsewhere, refuses.
    fn list<'a>(
        &'a self,
        namespace: &'a str,
        filter: ListFilter<'a>,
    ) -> BoxFuture<'a, Result<Vec<(String, Counted)>, StoreError>> {
        let _ = (namespace, filter);
        Box::pin(std::future::ready(Err(operator::refused(
            self.name(),
            "list its keys",
        ))))
    }

    /// Deletes `key`'s record only while it is still the record `seen`
    /// describes (same state, owner, fence and fingerprint), in one atomic
    /// step; `false`, and nothing deleted, when it changed (it expired and
    /// the key was claimed anew, it finished, or it is gone). `idem forget`
    /// deletes what the operator inspected this way and nothing else. The
    /// default, for stores written elsewhere, refuses.
    fn forget_if<'a>(
        &'a self,
        key: &'a str,
        seen: &'a RecordState,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let _ = (key, seen);
        Box::pin(std::future::ready(Err(operator::refused(
            self.name(),
            "delete conditionally",
        ))))
    }

    /// The expired records of `namespace` only: deleted, or with `dry_run`
    /// counted; how many. Stores with native expiry (Redis) answer 0. Other
    /// tables are not namespaced here: [`purge_report`](Store::purge_report)
    /// purges them. The default, for stores written elsewhere, refuses.
    fn purge_namespace<'a>(
        &'a self,
        namespace: &'a str,
        dry_run: bool,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        let _ = (namespace, dry_run);
        Box::pin(std::future::ready(Err(operator::refused(
            self.name(),
            "purge one namespace",
        ))))
    }

    /// The one-time token store kept beside the records, if this backend has one
    /// (memory, Redis, Redis Cluster, PostgreSQL, MySQL/MariaDB, SQLite). `None`
    /// (the default, for stores written elsewhere): `Idem::tokens()` fails with
    /// `Error::Config`.
    fn tokens(&self) -> Option<&dyn token::TokenStore> {
        None
    }

    /// The state check-and-set, if this backend offers it (memory, Redis,
    /// Redis Cluster).
    fn states(&self) -> Option<&dyn state::StateStore> {
        None
    }

    /// The queue that bounds this store's operations in flight, if it has one
    /// (Redis, Redis Cluster, the SQL stores): the execution layer takes a turn
    /// from it before an operation's timer starts, so time spent queueing in the
    /// client under a burst is bounded by the caller's budget and never reported
    /// as an outage (see [`SendQueue`]). `None` (the default): no limit.
    fn send_queue(&self) -> Option<&SendQueue> {
        None
    }

    /// Completes that applied but were acknowledged by fewer replicas than the
    /// store's durability asks for, since the last call (the execution layer
    /// counts them as `idem_store_unreplicated_total`). 0 by default.
    fn take_unreplicated(&self) -> u64 {
        0
    }
}

/// Microseconds since the Unix epoch, the time half of a hybrid fence.
pub(crate) fn unix_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}
