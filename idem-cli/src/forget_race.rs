//! `forget` against the race it must lose gracefully: between its read and
//! its delete, the finished record expires and another caller claims the
//! key. The delete must leave that live claim alone.

use std::time::Duration;

use idem::fingerprint::Fingerprint;
use idem::store::{BoxFuture, Claim, ClaimRequest, Owned, Owner, RecordState, StoreError, Warning};
use idem::{MemoryStore, Store};

use crate::fail::NO;
use crate::render::Out;

const TTL: Duration = Duration::from_millis(50);

/// A memory store where every `inspect` is followed, before its answer
/// arrives, by the record's expiry and a new claim of the key.
struct Racy {
    inner: MemoryStore,
    newcomer: Owner,
}

fn req(key: &str, owner: Owner) -> ClaimRequest<'_> {
    ClaimRequest {
        key,
        owner,
        fingerprint: Fingerprint([1; 16]),
        lease: Duration::from_secs(60),
    }
}

impl Store for Racy {
    fn name(&self) -> &'static str {
        "memory"
    }
    fn claim<'a>(&'a self, r: ClaimRequest<'a>) -> BoxFuture<'a, Result<Claim, StoreError>> {
        self.inner.claim(r)
    }
    fn complete<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        payload: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        self.inner.complete(key, owner, payload, ttl)
    }
    fn release<'a>(&'a self, key: &'a str, o: Owner) -> BoxFuture<'a, Result<Owned, StoreError>> {
        self.inner.release(key, o)
    }
    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        self.inner.renew(key, owner, lease)
    }
    fn inspect<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecordState>, StoreError>> {
        Box::pin(async move {
            let read = self.inner.inspect(key).await;
            tokio::time::sleep(TTL * 3).await;
            let taken = self.inner.claim(req(key, self.newcomer)).await?;
            assert!(matches!(taken, Claim::Claimed { .. }), "{taken:?}");
            read
        })
    }
    fn forget<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.inner.forget(key)
    }
    fn forget_if<'a>(
        &'a self,
        key: &'a str,
        seen: &'a RecordState,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.inner.forget_if(key, seen)
    }
    fn purge_expired(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.inner.purge_expired()
    }
    fn verify(&self) -> BoxFuture<'_, Result<Vec<Warning>, StoreError>> {
        self.inner.verify()
    }
}

#[tokio::test]
async fn forget_leaves_a_claim_taken_after_its_read() {
    let (key, first) = ("shop:pay:1", Owner::fresh());
    let store = Racy {
        inner: MemoryStore::new(),
        newcomer: Owner::fresh(),
    };
    let claim = store.inner.claim(req(key, first)).await.unwrap();
    assert!(matches!(claim, Claim::Claimed { .. }));
    let done = store.inner.complete(key, first, b"I1", TTL).await.unwrap();
    assert_eq!(done, Owned::Applied);

    let code = crate::commands::forget(&store, key, false, Out { json: true }).await;
    assert_eq!(code.unwrap(), NO, "the record changed: nothing removed");
    match store.inner.inspect(key).await.unwrap() {
        Some(RecordState::InProgress { owner, .. }) => assert_eq!(owner, store.newcomer),
        other => panic!("the newcomer's claim was deleted: {other:?}"),
    }
}
