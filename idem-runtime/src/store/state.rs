//! The state check-and-set contract: move a key's state from an
//! expected value to a new one, with a TTL, in one atomic step. Redis does it in
//! one script; the memory store under one lock.
//! Stores that offer it return themselves from [`Store::states`](super::Store::states).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::{BoxFuture, Owner, StoreError};

/// What a check-and-set did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateCas {
    /// The state was the expected one and is now the new one.
    Applied,
    /// The state already was the new one (a repeated request): nothing changed.
    AlreadyApplied,
    /// The state is something else (`None`: the key has no state): nothing changed.
    InvalidTransition {
        /// The state found.
        current: Option<String>,
    },
}

/// A backend offering the state check-and-set.
pub trait StateStore: Send + Sync {
    /// `from` → `to` with `ttl` (`from = None`: only if the key has no state),
    /// by `owner` (one per call, kept with the state it set): a retry by the
    /// owner whose attempt applied (its reply was lost) is `Applied` again;
    /// `AlreadyApplied` is for every other caller.
    fn state_cas<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        from: Option<&'a str>,
        to: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<StateCas, StoreError>>;

    /// The key's current state.
    fn state<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>>;
}

/// The memory store's states: state, expiry, and the owner that entered each
/// state (a retry of an owner whose transition applied is `Applied` even
/// after another caller moved the key on).
#[derive(Debug, Default)]
pub struct MemoryStates(Mutex<HashMap<String, StateEntry>>);

#[derive(Debug)]
struct StateEntry {
    state: String,
    expires: Instant,
    entered_by: HashMap<String, Owner>,
}

impl MemoryStates {
    fn cas(
        &self,
        key: &str,
        owner: Owner,
        from: Option<&str>,
        to: &str,
        ttl: Duration,
    ) -> StateCas {
        let now = Instant::now();
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let current = map.get(key).filter(|e| e.expires > now);
        if current.is_some_and(|e| e.entered_by.get(to) == Some(&owner)) {
            return StateCas::Applied;
        }
        if current.is_some_and(|e| e.state == to) {
            return StateCas::AlreadyApplied;
        }
        let mut entered_by = match current.map(|e| e.state.as_str()) {
            c if c != from => {
                return StateCas::InvalidTransition {
                    current: c.map(str::to_owned),
                };
            }
            _ => map
                .remove(key)
                .filter(|e| e.expires > now)
                .map(|e| e.entered_by)
                .unwrap_or_default(),
        };
        entered_by.insert(to.to_owned(), owner);
        let expires = now + ttl.min(crate::policy::MAX_DURATION);
        map.insert(
            key.to_owned(),
            StateEntry {
                state: to.to_owned(),
                expires,
                entered_by,
            },
        );
        StateCas::Applied
    }
}

impl StateStore for MemoryStates {
    fn state_cas<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        from: Option<&'a str>,
        to: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<StateCas, StoreError>> {
        Box::pin(std::future::ready(Ok(self.cas(key, owner, from, to, ttl))))
    }

    fn state<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        let now = Instant::now();
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let s = map
            .get(key)
            .filter(|e| e.expires > now)
            .map(|e| e.state.clone());
        Box::pin(std::future::ready(Ok(s)))
    }
}
