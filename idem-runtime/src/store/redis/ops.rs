//! The `Store` record operations both Redis stores share, as a macro: the
//! single-node and the cluster connection are different types, and each store
//! expands the same bodies over its own.

/// The record operations both Redis stores share: each takes the next multiplexed
/// connection of the pool (a cheap clone) and runs one script or command on one key,
/// then, with replicated durability, a `WAIT` on that same connection after a
/// write (see `durability.rs`). Expanded inside each `impl Store`, since the two
/// connection types differ.
macro_rules! record_ops {
    () => {
        fn claim<'a>(&'a self, req: ClaimRequest<'a>) -> BoxFuture<'a, Result<Claim, StoreError>> {
            let mut con = self.con();
            Box::pin(async move {
                let claim = scripts::claim(&mut con, &self.layout, req).await?;
                if matches!(claim, Claim::Claimed { .. }) {
                    self.replication
                        .claimed(&mut con, &self.layout, req.key)
                        .await?;
                }
                Ok(claim)
            })
        }

        fn claim_unfenced<'a>(
            &'a self,
            req: ClaimRequest<'a>,
        ) -> BoxFuture<'a, Result<Claim, StoreError>> {
            let mut con = self.con();
            Box::pin(async move {
                let claim =
                    native::claim_unfenced(&mut con, &self.layout, &self.native, req).await?;
                if matches!(claim, Claim::Claimed { .. }) {
                    self.replication
                        .claimed(&mut con, &self.layout, req.key)
                        .await?;
                }
                Ok(claim)
            })
        }

        fn complete<'a>(
            &'a self,
            key: &'a str,
            owner: Owner,
            payload: &'a [u8],
            ttl: Duration,
        ) -> BoxFuture<'a, Result<Owned, StoreError>> {
            self.complete_taken(key, owner, scripts::UNDESCRIBED, payload, ttl)
        }

        /// The complete script's shortcut: see `scripts::COMPLETE`.
        fn complete_taken<'a>(
            &'a self,
            key: &'a str,
            owner: Owner,
            taken: crate::store::Taken,
            payload: &'a [u8],
            ttl: Duration,
        ) -> BoxFuture<'a, Result<Owned, StoreError>> {
            let mut con = self.con();
            Box::pin(async move {
                let done =
                    scripts::complete(&mut con, &self.layout, key, owner, taken, payload, ttl)
                        .await?;
                if matches!(done, Owned::Applied) {
                    self.replication
                        .completed(&mut con, &self.layout, key)
                        .await;
                }
                Ok(done)
            })
        }

        fn release<'a>(
            &'a self,
            key: &'a str,
            owner: Owner,
        ) -> BoxFuture<'a, Result<Owned, StoreError>> {
            let mut con = self.con();
            Box::pin(async move { scripts::release(&mut con, &self.layout, key, owner).await })
        }

        fn renew<'a>(
            &'a self,
            key: &'a str,
            owner: Owner,
            lease: Duration,
        ) -> BoxFuture<'a, Result<Owned, StoreError>> {
            let mut con = self.con();
            Box::pin(async move { scripts::renew(&mut con, &self.layout, key, owner, lease).await })
        }

        fn inspect<'a>(
            &'a self,
            key: &'a str,
        ) -> BoxFuture<'a, Result<Option<RecordState>, StoreError>> {
            let mut con = self.con();
            Box::pin(async move { scripts::inspect(&mut con, &self.layout, key).await })
        }

        fn forget<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
            let mut con = self.con();
            Box::pin(async move { scripts::forget(&mut con, &self.layout, key).await })
        }

        fn take_unreplicated(&self) -> u64 {
            self.replication.take()
        }

        /// Redis expires records natively: nothing to purge.
        fn purge_expired(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
            Box::pin(std::future::ready(Ok(0)))
        }

        /// Redis expires records and tokens natively: nothing to purge or to
        /// count, dry run or not.
        fn purge_report(
            &self,
            _dry_run: bool,
        ) -> BoxFuture<'_, Result<crate::store::PurgeReport, StoreError>> {
            Box::pin(std::future::ready(Ok(crate::store::PurgeReport::default())))
        }
    };
}
pub(crate) use record_ops;
