//! The store traits of [`ProcTech`]: tokens and states through the faults,
//! records straight to the memory store.

use std::sync::Arc;
use std::time::Duration;

use idem::store::state::{StateCas, StateStore};
use idem::store::token::{TokenStore, TokenTake};
use idem::store::{
    BoxFuture, Claim, ClaimRequest, Owned, Owner, RecordState, Store, StoreError, Warning,
};

use super::faults::{ProcTech, What, lock};

impl TokenStore for ProcTech {
    fn issue<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        // Issued before the faults start (the harness's set-up).
        let t = self.shared.raw_tokens();
        Box::pin(async move { t.issue(key, ttl).await })
    }

    fn take<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<TokenTake, StoreError>> {
        Box::pin(self.run(
            key,
            move |s| {
                let t = Arc::clone(&lock(&s.tokens));
                async move { t.take(key, owner).await }
            },
            move |r| What::Take { owner, res: *r },
        ))
    }

    fn give_back<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(self.run(
            key,
            move |s| {
                let t = Arc::clone(&lock(&s.tokens));
                async move { t.give_back(key, owner).await }
            },
            move |r| What::GiveBack { owner, res: *r },
        ))
    }
}

impl StateStore for ProcTech {
    fn state_cas<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        from: Option<&'a str>,
        to: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<StateCas, StoreError>> {
        Box::pin(self.run(
            key,
            move |s| {
                let st = Arc::clone(&lock(&s.states));
                async move { st.state_cas(key, owner, from, to, ttl).await }
            },
            move |r| What::Cas {
                to: to.to_owned(),
                res: r.clone(),
            },
        ))
    }

    fn state<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(async move {
            self.crashed()?;
            let st = Arc::clone(&lock(&self.shared.states));
            st.state(key).await
        })
    }
}

/// The record side is the memory store's, without faults: these techniques
/// do not use it (the lock runs on the guard's own store chain).
impl Store for ProcTech {
    fn name(&self) -> &'static str {
        "memory"
    }
    fn claim<'a>(&'a self, req: ClaimRequest<'a>) -> BoxFuture<'a, Result<Claim, StoreError>> {
        self.shared.records.claim(req)
    }
    fn complete<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        payload: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        self.shared.records.complete(key, owner, payload, ttl)
    }
    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        self.shared.records.release(key, owner)
    }
    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Store::renew(&self.shared.records, key, owner, lease)
    }
    fn inspect<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecordState>, StoreError>> {
        self.shared.records.inspect(key)
    }
    fn forget<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.shared.records.forget(key)
    }
    fn purge_expired(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.shared.records.purge_expired()
    }
    fn verify(&self) -> BoxFuture<'_, Result<Vec<Warning>, StoreError>> {
        self.shared.records.verify()
    }
    fn tokens(&self) -> Option<&dyn TokenStore> {
        Some(self)
    }
    fn states(&self) -> Option<&dyn StateStore> {
        Some(self)
    }
}
