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
    Consuming {
        owner: Owner,
        fence: Fence,
        until: Instant,
    },
}

/// The memory store's tokens: one map under one lock (token traffic is a form
/// submission, not a hot path).
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

    fn take_now(&self, key: &str, owner: Owner, lease: Duration) -> TokenTake {
        let now = Instant::now();
        let mut map = self.map();
        let Some((state, _)) = map.get_mut(key).filter(|(_, e)| *e > now) else {
            map.remove(key);
            return TokenTake::Invalid;
        };
        match *state {
            State::Consuming {
                owner: o, fence, ..
            } if o == owner => TokenTake::Taken { fence },
            State::Consuming { until, .. } if until > now => TokenTake::Busy {
                remaining: until - now,
            },
            _ => {
                let fence = self.next_fence();
                let until = now + lease.min(crate::policy::MAX_DURATION);
                *state = State::Consuming {
                    owner,
                    fence,
                    until,
                };
                TokenTake::Taken { fence }
            }
        }
    }

    /// Applies `f` to `owner`'s consuming token; `absent` when the token is gone.
    fn owned(
        &self,
        key: &str,
        owner: Owner,
        absent: Owned,
        f: impl FnOnce(&mut Option<State>),
    ) -> Owned {
        let now = Instant::now();
        let mut map = self.map();
        match map.get(key) {
            Some((_, e)) if *e <= now => {
                map.remove(key);
                absent
            }
            None => absent,
            Some((State::Consuming { owner: o, .. }, _)) if *o == owner => {
                let (state, expires) = map.remove(key).expect("present");
                let mut slot = Some(state);
                f(&mut slot);
                if let Some(s) = slot {
                    map.insert(key.to_owned(), (s, expires));
                }
                Owned::Applied
            }
            Some(_) => Owned::NotOwner,
        }
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
        lease: Duration,
    ) -> BoxFuture<'a, Result<TokenTake, StoreError>> {
        Box::pin(std::future::ready(Ok(self.take_now(key, owner, lease))))
    }

    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        let until = Instant::now() + lease.min(crate::policy::MAX_DURATION);
        let r = self.owned(key, owner, Owned::NotOwner, |s| {
            if let Some(State::Consuming { until: u, .. }) = s {
                *u = until;
            }
        });
        Box::pin(std::future::ready(Ok(r)))
    }

    fn give_back<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        let r = self.owned(key, owner, Owned::Applied, |s| *s = Some(State::Issued));
        Box::pin(std::future::ready(Ok(r)))
    }

    fn revoke<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Owned, StoreError>> {
        self.map().remove(key);
        Box::pin(std::future::ready(Ok(Owned::Applied)))
    }
}
