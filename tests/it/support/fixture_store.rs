//! A SQL fixture as an `Arc<dyn Store>`, for the suites that take any store:
//! the fixture's tables are dropped when the last handle goes.

use std::sync::Arc;
use std::time::Duration;

use idem::db::Dialect;

use super::sql::Fixture;

/// A fixture as an `Arc<dyn Store>`: the tables go when the last handle does.
#[derive(Debug)]
pub(crate) struct FixtureStore(pub(crate) Fixture);

impl idem::Store for FixtureStore {
    fn name(&self) -> &'static str {
        self.0.store.name()
    }
    fn claim<'a>(
        &'a self,
        req: idem::store::ClaimRequest<'a>,
    ) -> idem::store::BoxFuture<'a, Result<idem::store::Claim, idem::store::StoreError>> {
        self.0.store.claim(req)
    }
    fn complete<'a>(
        &'a self,
        key: &'a str,
        owner: idem::store::Owner,
        payload: &'a [u8],
        ttl: Duration,
    ) -> idem::store::BoxFuture<'a, Result<idem::store::Owned, idem::store::StoreError>> {
        self.0.store.complete(key, owner, payload, ttl)
    }
    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: idem::store::Owner,
    ) -> idem::store::BoxFuture<'a, Result<idem::store::Owned, idem::store::StoreError>> {
        self.0.store.release(key, owner)
    }
    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: idem::store::Owner,
        lease: Duration,
    ) -> idem::store::BoxFuture<'a, Result<idem::store::Owned, idem::store::StoreError>> {
        self.0.store.renew(key, owner, lease)
    }
    fn inspect<'a>(
        &'a self,
        key: &'a str,
    ) -> idem::store::BoxFuture<'a, Result<Option<idem::store::RecordState>, idem::store::StoreError>>
    {
        self.0.store.inspect(key)
    }
    fn forget<'a>(
        &'a self,
        key: &'a str,
    ) -> idem::store::BoxFuture<'a, Result<bool, idem::store::StoreError>> {
        self.0.store.forget(key)
    }
    fn purge_expired(&self) -> idem::store::BoxFuture<'_, Result<u64, idem::store::StoreError>> {
        self.0.store.purge_expired()
    }
    fn purge_report(
        &self,
        dry_run: bool,
    ) -> idem::store::BoxFuture<'_, Result<idem::store::PurgeReport, idem::store::StoreError>> {
        self.0.store.purge_report(dry_run)
    }
    fn census<'a>(
        &'a self,
        namespace: &'a str,
    ) -> idem::store::BoxFuture<'a, Result<idem::store::Census, idem::store::StoreError>> {
        self.0.store.census(namespace)
    }
    fn list<'a>(
        &'a self,
        namespace: &'a str,
        filter: idem::store::ListFilter<'a>,
    ) -> idem::store::BoxFuture<
        'a,
        Result<Vec<(String, idem::store::Counted)>, idem::store::StoreError>,
    > {
        self.0.store.list(namespace, filter)
    }
    fn forget_if<'a>(
        &'a self,
        key: &'a str,
        seen: &'a idem::store::RecordState,
    ) -> idem::store::BoxFuture<'a, Result<bool, idem::store::StoreError>> {
        self.0.store.forget_if(key, seen)
    }
    fn verify(
        &self,
    ) -> idem::store::BoxFuture<'_, Result<Vec<idem::store::Warning>, idem::store::StoreError>>
    {
        self.0.store.verify()
    }
    fn tokens(&self) -> Option<&dyn idem::store::token::TokenStore> {
        self.0.store.tokens()
    }
    fn send_queue(&self) -> Option<&idem::store::SendQueue> {
        self.0.store.send_queue()
    }
}

/// A fresh store on `dialect` for the shared conformance suite.
pub(crate) async fn conformance_store(dialect: Dialect) -> Arc<dyn idem::Store> {
    Arc::new(FixtureStore(Fixture::new(dialect).await))
}
