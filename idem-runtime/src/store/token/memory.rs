//! One-time tokens in process memory (the memory store's).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::{TokenStore, TokenTake};
use crate::fence::Fence;
use crate::store::{BoxFuture, Owned, Owner, StoreError, unix_micros};

#[derive(Debug, Clone, Copy)]
enum State {
    Issued,
    /// Taken by `owner`'s take with `fence`: the tombstone of a spent token.
    Spent {
        owner: Owner,
        fence: Fence,
    },
}

/// The memory store's tokens: one map under one lock (token traffic is a form
/// submission, not a hot path). Each entry keeps its issue-time expiry.
#[derive(Debug, Default)]
pub struct MemoryTokens {
    map: Mutex<HashMap<String, (State, Instant)>>,
    last_fence: AtomicU64,
}

impl MemoryTokens {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, (State, Instant)>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hybrid fence as the record side's: wall-clock microseconds, bumped.
    fn next_fence(&self) -> Fence {
        let now = unix_micros();
        let prev = self
            .last_fence
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |l| {
                Some(now.max(l + 1))
            })
            .unwrap_or(0);
        Fence::new(now.max(prev + 1))
    }

    /// The live state of `key` (an expired entry is dropped on the way).
    fn live<R>(&self, key: &str, f: impl FnOnce(Option<&mut State>) -> R) -> R {
        let now = Instant::now();
        let mut map = self.map();
        if map.get(key).is_some_and(|(_, e)| *e <= now) {
            map.remove(key);
        }
        f(map.get_mut(key).map(|(s, _)| s))
    }
}

impl TokenStore for MemoryTokens {
    fn issue<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        let now = Instant::now();
        let mut map = self.map();
        if map.get(key).is_none_or(|(_, e)| *e <= now) {
            let expires = now + ttl.min(crate::policy::MAX_DURATION);
            map.insert(key.to_owned(), (State::Issued, expires));
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn take<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<TokenTake, StoreError>> {
        let take = self.live(key, |state| match state {
            None => TokenTake::Invalid,
            Some(State::Spent { owner: o, fence }) if *o == owner => {
                TokenTake::Taken { fence: *fence }
            }
            Some(State::Spent { .. }) => TokenTake::Invalid,
            Some(s @ State::Issued) => {
                let fence = self.next_fence();
                *s = State::Spent { owner, fence };
                TokenTake::Taken { fence }
            }
        });
        Box::pin(std::future::ready(Ok(take)))
    }

    fn give_back<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        let r = self.live(key, |state| match state {
            None => Owned::Applied,
            Some(s) if matches!(*s, State::Spent { owner: o, .. } if o == owner) => {
                *s = State::Issued;
                Owned::Applied
            }
            Some(_) => Owned::NotOwner,
        });
        Box::pin(std::future::ready(Ok(r)))
    }
}
