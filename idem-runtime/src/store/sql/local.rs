//! What one store instance knows about its own callers' claims, to keep bursts
//! of local duplicates off the database.
//!
//! When 50 callers in one process ask for a key at the same instant, each of them
//! would otherwise send a claim, and each waiter would poll again every few
//! milliseconds until the holder's claim returns: on this 2-core machine a burst
//! of 50 × 100 claims then took longer than the guard's operation budget. So
//! claims of one key are serialised per process ([`KeyLocks`]), and a claim this
//! instance granted is remembered ([`LocalClaims`]) until its owner completes,
//! releases or loses it here: other local callers get `Busy` (or, for the same
//! owner, `Claimed` again) without a round trip.
//!
//! This only ever answers `Busy` for a claim the database also holds: the entry
//! expires at `send time + lease`, no later than the row, and every change to
//! the claim by its owner goes through this instance, which drops or extends the
//! entry. Claims held by other processes are never cached, and neither are
//! finished records (an operator's `forget` elsewhere must take effect at once).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::fingerprint::Fingerprint;
use crate::outcome::Fence;
use crate::store::{Claim, DoneRecord, Owner};

/// Entries kept before expired ones are swept (bodies whose caller was dropped
/// leave theirs until the lease would have lapsed).
const SWEEP_AT: usize = 4_096;

#[derive(Debug, Clone, Copy)]
struct Held {
    owner: Owner,
    fence: Fence,
    fingerprint: Fingerprint,
    until: Instant,
}

/// Claims granted by this instance and not yet finished.
#[derive(Debug, Default)]
pub(crate) struct LocalClaims(Mutex<HashMap<String, Held>>);

impl LocalClaims {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The answer to `me`'s claim of `key`, if a live local claim decides it.
    pub(crate) fn answer(&self, key: &str, me: Owner) -> Option<Claim> {
        let map = self.map();
        let h = map.get(key)?;
        let now = Instant::now();
        if h.until <= now {
            return None;
        }
        Some(if h.owner == me {
            Claim::Claimed { fence: h.fence }
        } else {
            Claim::Busy {
                fingerprint: h.fingerprint,
                remaining: h.until - now,
            }
        })
    }

    /// Remembers a claim the database granted to `owner` (sent at `sent`).
    pub(crate) fn hold(
        &self,
        key: &str,
        owner: Owner,
        fence: Fence,
        fingerprint: Fingerprint,
        until: Instant,
    ) {
        let mut map = self.map();
        if map.len() >= SWEEP_AT {
            let now = Instant::now();
            map.retain(|_, h| h.until > now);
        }
        map.insert(
            key.to_owned(),
            Held {
                owner,
                fence,
                fingerprint,
                until,
            },
        );
    }

    /// A renewal by `owner` applied: its claim now lives until `until`.
    pub(crate) fn extend(&self, key: &str, owner: Owner, until: Instant) {
        if let Some(h) = self.map().get_mut(key)
            && h.owner == owner
        {
            h.until = until;
        }
    }

    /// The key changed in a way this cache cannot follow: forget what we knew.
    pub(crate) fn drop_key(&self, key: &str) {
        self.map().remove(key);
    }
}

/// Per-key async locks: one claim of a key at a time in this instance. The
/// lock also carries the last finished record a claim under it read, with the
/// time that read was sent: a queued claim that arrived before that read was sent
/// may take its answer (the read happened while that claim was in progress, so
/// answering it is a valid order of events), which turns the burst of re-claims
/// when a local holder finishes into one or two reads.
#[derive(Debug, Default)]
pub(crate) struct KeyLocks(Mutex<HashMap<String, Arc<tokio::sync::Mutex<Shared>>>>);

/// What the claims of one key share while they queue.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    done: Option<(Instant, DoneRecord)>,
}

impl KeyLocks {
    /// Waits for `key`'s turn. The guard owns its way back to the map, so a
    /// claim that must finish after its caller is gone can take it along.
    pub(crate) async fn lock(self: &Arc<Self>, key: &str) -> KeyGuard {
        let m = {
            let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(map.entry(key.to_owned()).or_default())
        };
        KeyGuard {
            locks: Arc::clone(self),
            key: key.to_owned(),
            guard: Some(m.lock_owned().await),
        }
    }
}

/// Holds one key's lock; removes the map entry when nobody else wants it.
#[derive(Debug)]
pub(crate) struct KeyGuard {
    locks: Arc<KeyLocks>,
    key: String,
    guard: Option<tokio::sync::OwnedMutexGuard<Shared>>,
}

impl KeyGuard {
    /// A finished record read by a claim sent after `arrived`.
    pub(crate) fn done_since(&self, arrived: Instant) -> Option<DoneRecord> {
        match self.guard.as_deref()?.done.as_ref()? {
            (sent, rec) if *sent >= arrived => Some(rec.clone()),
            _ => None,
        }
    }

    /// Remembers the answer of a claim sent at `sent`, for the claims queued behind it.
    pub(crate) fn remember(&mut self, sent: Instant, answer: &Claim) {
        if let Some(shared) = self.guard.as_deref_mut() {
            shared.done = match answer {
                Claim::Done(rec) => Some((sent, rec.clone())),
                _ => None,
            };
        }
    }
}

impl Drop for KeyGuard {
    fn drop(&mut self) {
        drop(self.guard.take());
        let mut map = self.locks.0.lock().unwrap_or_else(|p| p.into_inner());
        // Only the map holds it: no waiter, no holder.
        if map
            .get(&self.key)
            .is_some_and(|m| Arc::strong_count(m) == 1)
        {
            map.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn answers_only_live_local_claims() {
        let c = LocalClaims::default();
        let (a, b) = (Owner(1), Owner(2));
        assert_eq!(c.answer("k", a), None);
        c.hold(
            "k",
            a,
            Fence::new(7),
            Fingerprint([1; 16]),
            Instant::now() + Duration::from_secs(5),
        );
        assert_eq!(
            c.answer("k", a),
            Some(Claim::Claimed {
                fence: Fence::new(7)
            })
        );
        assert!(
            matches!(c.answer("k", b), Some(Claim::Busy { fingerprint, .. }) if fingerprint == Fingerprint([1; 16]))
        );
        c.extend("k", b, Instant::now()); // not b's claim: unchanged
        assert!(c.answer("k", b).is_some());
        c.extend("k", a, Instant::now());
        assert_eq!(c.answer("k", b), None, "expired entries answer nothing");
        c.hold(
            "k",
            a,
            Fence::new(8),
            Fingerprint::NONE,
            Instant::now() + Duration::from_secs(5),
        );
        c.drop_key("k");
        assert_eq!(c.answer("k", a), None);
    }

    #[tokio::test]
    async fn queued_claims_share_only_later_reads() {
        let locks = Arc::new(KeyLocks::default());
        let rec = DoneRecord {
            fingerprint: Fingerprint::NONE,
            fence: Fence::new(3),
            owner: Owner(1),
            payload: b"x".to_vec(),
        };
        let early = Instant::now();
        let sent = Instant::now();
        {
            let mut g = locks.lock("k").await;
            g.remember(sent, &Claim::Done(rec.clone()));
            assert_eq!(
                g.done_since(early),
                Some(rec.clone()),
                "arrived before the read was sent"
            );
            let late = Instant::now() + Duration::from_millis(1);
            assert_eq!(g.done_since(late), None, "arrived after it");
            let busy = Claim::Busy {
                fingerprint: Fingerprint::NONE,
                remaining: Duration::ZERO,
            };
            g.remember(Instant::now(), &busy);
            assert_eq!(
                g.done_since(early),
                None,
                "only finished records are shared"
            );
        }
        assert!(
            locks.0.lock().unwrap().is_empty(),
            "the entry goes with its last user"
        );
    }
}
