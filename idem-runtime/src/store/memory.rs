//! In-process record store.
//!
//! Correct for one process only: records live in this process's memory and vanish
//! with it. Use it for tests, single-instance tools, and as the CPU-only ceiling in
//! benchmarks; use Redis or a SQL store for anything deployed more than once.
//!
//! Time comes from `tokio::time::Instant`, so tests and the simulation can run it
//! under paused, virtual time.

use std::collections::HashMap;
use std::hash::BuildHasher as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::{
    BoxFuture, Census, Claim, ClaimRequest, Counted, DoneRecord, ListFilter, Owned, Owner,
    PurgeReport, RecordState, Store, StoreError, Warning, unix_micros,
};
use crate::fingerprint::Fingerprint;
use crate::outcome::Fence;

mod operator;

const SHARDS: usize = 32;

#[derive(Debug, Clone)]
enum Entry {
    Pending {
        owner: Owner,
        fence: Fence,
        fingerprint: Fingerprint,
        expires: Instant,
    },
    Done {
        record: DoneRecord,
        expires: Instant,
    },
}

/// `now + d`, capped at [`MAX_DURATION`](crate::policy::MAX_DURATION) from now:
/// a store called directly with `Duration::MAX` keeps the record "for ever"
/// instead of overflowing `Instant` (which panics).
fn far(now: Instant, d: Duration) -> Instant {
    now + d.min(crate::policy::MAX_DURATION)
}

impl Entry {
    fn expires(&self) -> Instant {
        match self {
            Entry::Pending { expires, .. } | Entry::Done { expires, .. } => *expires,
        }
    }
}

/// An in-process, sharded record store. Not distributed: see the module docs.
#[derive(Debug)]
pub struct MemoryStore {
    shards: Box<[Mutex<HashMap<String, Entry>>]>,
    /// Picks a key's shard; seeded per store, so crafted keys cannot pile
    /// onto one shard.
    spread: foldhash::fast::RandomState,
    last_fence: AtomicU64,
    tokens: super::token::memory::MemoryTokens,
    states: super::state::MemoryStates,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            spread: foldhash::fast::RandomState::default(),
            last_fence: AtomicU64::new(0),
            tokens: Default::default(),
            states: Default::default(),
        }
    }

    fn shard(&self, key: &str) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        let i = (self.spread.hash_one(key) % SHARDS as u64) as usize;
        // A poisoned shard only means another thread panicked mid-update of a map
        // whose every update is a single insert/remove: the data is consistent.
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hybrid fence: wall-clock microseconds, bumped past the last one handed out.
    /// Monotonic for the process and, through the clock, across restarts.
    fn next_fence(&self) -> Fence {
        let now = unix_micros();
        let mut last = self.last_fence.load(Ordering::Relaxed);
        loop {
            let next = now.max(last + 1);
            match self.last_fence.compare_exchange_weak(
                last,
                next,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Fence::new(next),
                Err(actual) => last = actual,
            }
        }
    }

    /// Number of live (unexpired) records.
    pub fn len(&self) -> usize {
        let now = Instant::now();
        self.shards
            .iter()
            .map(|s| {
                s.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .values()
                    .filter(|e| e.expires() > now)
                    .count()
            })
            .sum()
    }

    /// True when no live record exists.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every record (a simulated data loss); fences keep increasing.
    pub fn clear(&self) {
        for s in self.shards.iter() {
            s.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
    }

    fn claim_now(&self, req: ClaimRequest<'_>) -> Claim {
        let now = Instant::now();
        let mut map = self.shard(req.key);
        if let Some(entry) = map.get(req.key)
            && entry.expires() > now
        {
            match entry {
                Entry::Done { record, .. } => return Claim::Done(record.clone()),
                Entry::Pending { owner, fence, .. } if *owner == req.owner => {
                    return Claim::Claimed { fence: *fence };
                }
                Entry::Pending {
                    fingerprint,
                    expires,
                    ..
                } => {
                    return Claim::Busy {
                        fingerprint: *fingerprint,
                        remaining: *expires - now,
                    };
                }
            }
        }
        let fence = self.next_fence();
        map.insert(
            req.key.to_owned(),
            Entry::Pending {
                owner: req.owner,
                fence,
                fingerprint: req.fingerprint,
                expires: far(now, req.lease),
            },
        );
        Claim::Claimed { fence }
    }

    fn complete_now(&self, key: &str, owner: Owner, payload: &[u8], ttl: Duration) -> Owned {
        let now = Instant::now();
        let mut map = self.shard(key);
        let Some(entry) = map.get_mut(key) else {
            return Owned::NotOwner;
        };
        match entry {
            Entry::Pending {
                owner: o,
                fence,
                fingerprint,
                expires,
            } if *o == owner && *expires > now => {
                *entry = Entry::Done {
                    record: DoneRecord {
                        fingerprint: *fingerprint,
                        fence: *fence,
                        owner,
                        payload: payload.to_vec(),
                    },
                    expires: far(now, ttl),
                };
                Owned::Applied
            }
            Entry::Done { record, expires } if record.owner == owner && *expires > now => {
                Owned::Applied
            }
            _ => Owned::NotOwner,
        }
    }

    fn release_now(&self, key: &str, owner: Owner) -> Owned {
        let mut map = self.shard(key);
        match map.get(key) {
            Some(Entry::Pending { owner: o, .. }) if *o == owner => {
                map.remove(key);
                Owned::Applied
            }
            // Already released by this owner (lost reply): nothing left to do.
            None => Owned::Applied,
            Some(_) => Owned::NotOwner,
        }
    }

    fn renew_now(&self, key: &str, owner: Owner, lease: Duration) -> Owned {
        let now = Instant::now();
        let mut map = self.shard(key);
        match map.get_mut(key) {
            Some(Entry::Pending {
                owner: o, expires, ..
            }) if *o == owner && *expires > now => {
                *expires = far(now, lease);
                Owned::Applied
            }
            _ => Owned::NotOwner,
        }
    }

    fn inspect_now(&self, key: &str) -> Option<RecordState> {
        Self::inspect_in(&self.shard(key), key)
    }

    /// `key`'s live record in its shard's locked map.
    fn inspect_in(map: &HashMap<String, Entry>, key: &str) -> Option<RecordState> {
        let now = Instant::now();
        let entry = map.get(key)?;
        if entry.expires() <= now {
            return None;
        }
        Some(match entry {
            Entry::Pending {
                owner,
                fence,
                fingerprint,
                expires,
            } => RecordState::InProgress {
                owner: *owner,
                fence: *fence,
                fingerprint: *fingerprint,
                remaining: *expires - now,
            },
            Entry::Done { record, expires } => RecordState::Done {
                record: record.clone(),
                remaining: *expires - now,
            },
        })
    }

    fn purge_now(&self) -> u64 {
        let now = Instant::now();
        let mut n = 0;
        for s in self.shards.iter() {
            let mut map = s.lock().unwrap_or_else(|p| p.into_inner());
            let before = map.len();
            map.retain(|_, e| e.expires() > now);
            n += (before - map.len()) as u64;
        }
        n
    }
}

impl Store for MemoryStore {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn claim<'a>(&'a self, req: ClaimRequest<'a>) -> BoxFuture<'a, Result<Claim, StoreError>> {
        Box::pin(std::future::ready(Ok(self.claim_now(req))))
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        payload: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(std::future::ready(Ok(
            self.complete_now(key, owner, payload, ttl)
        )))
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(std::future::ready(Ok(self.release_now(key, owner))))
    }

    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(std::future::ready(Ok(self.renew_now(key, owner, lease))))
    }

    fn inspect<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecordState>, StoreError>> {
        Box::pin(std::future::ready(Ok(self.inspect_now(key))))
    }

    fn forget<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(std::future::ready(Ok(self
            .shard(key)
            .remove(key)
            .is_some())))
    }

    fn purge_expired(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(std::future::ready(Ok(self.purge_now())))
    }

    /// Expired records are kept until a purge (or a claim of their key) drops
    /// them, so the census counts them like a SQL store's unpurged rows.
    fn census<'a>(&'a self, namespace: &'a str) -> BoxFuture<'a, Result<Census, StoreError>> {
        Box::pin(std::future::ready(Ok(self.census_now(namespace))))
    }

    /// Records only: the memory tokens drop an expired token when it is next used.
    fn purge_report(&self, dry_run: bool) -> BoxFuture<'_, Result<PurgeReport, StoreError>> {
        let records = self.purge_where("", dry_run);
        Box::pin(std::future::ready(Ok(
            PurgeReport::default().with("records", records)
        )))
    }

    fn purge_namespace<'a>(
        &'a self,
        namespace: &'a str,
        dry_run: bool,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        let prefix = crate::key::namespace_prefix(namespace);
        Box::pin(std::future::ready(Ok(self.purge_where(&prefix, dry_run))))
    }

    fn list<'a>(
        &'a self,
        namespace: &'a str,
        filter: ListFilter<'a>,
    ) -> BoxFuture<'a, Result<Vec<(String, Counted)>, StoreError>> {
        Box::pin(std::future::ready(Ok(self.list_now(namespace, filter))))
    }

    fn forget_if<'a>(
        &'a self,
        key: &'a str,
        seen: &'a RecordState,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(std::future::ready(Ok(self.forget_if_now(key, seen))))
    }

    fn verify(&self) -> BoxFuture<'_, Result<Vec<Warning>, StoreError>> {
        Box::pin(std::future::ready(Ok(vec![Warning(
            "memory store: records are per process and lost on restart; not for multi-instance deployments".into(),
        )])))
    }

    fn tokens(&self) -> Option<&dyn super::token::TokenStore> {
        Some(&self.tokens)
    }

    fn states(&self) -> Option<&dyn super::state::StateStore> {
        Some(&self.states)
    }
}
