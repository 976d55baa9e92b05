//! `Arc<S>` is a store wherever `S` is: handles share one store this way.

use std::time::Duration;

use super::{
    BoxFuture, Census, Claim, ClaimRequest, Counted, ListFilter, Owned, Owner, PurgeReport,
    RecordState, SendQueue, Store, StoreError, Taken, Warning, state, token,
};

impl<S: Store + ?Sized> Store for std::sync::Arc<S> {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn claim<'a>(&'a self, req: ClaimRequest<'a>) -> BoxFuture<'a, Result<Claim, StoreError>> {
        (**self).claim(req)
    }
    fn claim_unfenced<'a>(
        &'a self,
        req: ClaimRequest<'a>,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        (**self).claim_unfenced(req)
    }
    fn complete<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        payload: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        (**self).complete(key, owner, payload, ttl)
    }
    fn complete_taken<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        taken: Taken,
        payload: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        (**self).complete_taken(key, owner, taken, payload, ttl)
    }
    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        (**self).release(key, owner)
    }
    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        (**self).renew(key, owner, lease)
    }
    fn inspect<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecordState>, StoreError>> {
        (**self).inspect(key)
    }
    fn forget<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        (**self).forget(key)
    }
    fn purge_expired(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        (**self).purge_expired()
    }
    fn verify(&self) -> BoxFuture<'_, Result<Vec<Warning>, StoreError>> {
        (**self).verify()
    }
    fn census<'a>(&'a self, namespace: &'a str) -> BoxFuture<'a, Result<Census, StoreError>> {
        (**self).census(namespace)
    }
    fn purge_report(&self, dry_run: bool) -> BoxFuture<'_, Result<PurgeReport, StoreError>> {
        (**self).purge_report(dry_run)
    }
    fn tokens(&self) -> Option<&dyn token::TokenStore> {
        (**self).tokens()
    }
    fn states(&self) -> Option<&dyn state::StateStore> {
        (**self).states()
    }
    fn send_queue(&self) -> Option<&SendQueue> {
        (**self).send_queue()
    }
    fn take_unreplicated(&self) -> u64 {
        (**self).take_unreplicated()
    }
    fn list<'a>(
        &'a self,
        namespace: &'a str,
        filter: ListFilter<'a>,
    ) -> BoxFuture<'a, Result<Vec<(String, Counted)>, StoreError>> {
        (**self).list(namespace, filter)
    }
    fn forget_if<'a>(
        &'a self,
        key: &'a str,
        seen: &'a RecordState,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        (**self).forget_if(key, seen)
    }
    fn purge_namespace<'a>(
        &'a self,
        namespace: &'a str,
        dry_run: bool,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        (**self).purge_namespace(namespace, dry_run)
    }
}
