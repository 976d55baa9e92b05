//! The faults of the technique stores a wrapped store offers (one-time tokens,
//! the state check-and-set): the same plan, switches and counters as its
//! records, so a lost reply or a blip can be aimed at a token's consume or a
//! state's check-and-set as at a claim (issue 24: the techniques' defects were
//! all in the cases this wrapper could not reach).

use std::time::Duration;

use super::{FaultyStore, Op};
use crate::store::state::{StateCas, StateStore};
use crate::store::token::{TokenStore, TokenTake};
use crate::store::{BoxFuture, Owned, Owner, Store, StoreError};

impl<S: Store> FaultyStore<S> {
    fn inner_tokens(&self) -> Result<&dyn TokenStore, StoreError> {
        self.inner
            .tokens()
            .ok_or_else(|| StoreError::config("the wrapped store keeps no tokens"))
    }

    fn inner_states(&self) -> Result<&dyn StateStore, StoreError> {
        self.inner
            .states()
            .ok_or_else(|| StoreError::config("the wrapped store offers no state check-and-set"))
    }
}

impl<S: Store> TokenStore for FaultyStore<S> {
    fn issue<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(
            self.run(Op::Mutate, Some(key), move || match self.inner_tokens() {
                Ok(t) => t.issue(key, ttl),
                Err(e) => Box::pin(std::future::ready(Err(e))),
            }),
        )
    }

    fn take<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<TokenTake, StoreError>> {
        Box::pin(
            self.run(Op::Mutate, Some(key), move || match self.inner_tokens() {
                Ok(t) => t.take(key, owner),
                Err(e) => Box::pin(std::future::ready(Err(e))),
            }),
        )
    }

    fn give_back<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(
            self.run(Op::Mutate, Some(key), move || match self.inner_tokens() {
                Ok(t) => t.give_back(key, owner),
                Err(e) => Box::pin(std::future::ready(Err(e))),
            }),
        )
    }
}

impl<S: Store> StateStore for FaultyStore<S> {
    fn state_cas<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        from: Option<&'a str>,
        to: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<StateCas, StoreError>> {
        Box::pin(
            self.run(Op::Mutate, Some(key), move || match self.inner_states() {
                Ok(s) => s.state_cas(key, owner, from, to, ttl),
                Err(e) => Box::pin(std::future::ready(Err(e))),
            }),
        )
    }

    fn state<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(
            self.run(Op::Read, Some(key), move || match self.inner_states() {
                Ok(s) => s.state(key),
                Err(e) => Box::pin(std::future::ready(Err(e))),
            }),
        )
    }
}
