//! Store wrappers of the simulation.
//!
//! ```text
//! Idem (one per process) -> ProcStore (cut when the process crashes)
//!     -> FaultyStore (shared, seeded) -> RecordingStore -> the real store
//! ```
//! The recorder sits under the faults, so it logs what actually applied, including
//! commands whose reply the fault layer then dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idem::Store;
use idem::store::{BoxFuture, Claim, ClaimRequest, Owned, Owner, RecordState, StoreError, Warning};

use super::history::{StoreOp, World};
use super::rng::Rng;

/// Logs every mutating operation with its owner and result into the [`World`].
pub(crate) struct RecordingStore {
    inner: Arc<dyn Store>,
    world: Arc<World>,
}

impl RecordingStore {
    pub(crate) fn new(inner: Arc<dyn Store>, world: Arc<World>) -> Self {
        RecordingStore { inner, world }
    }
}

fn err_str<T: Clone>(r: &Result<T, StoreError>) -> Result<T, String> {
    r.clone().map_err(|e| e.to_string())
}

impl Store for RecordingStore {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn claim<'a>(&'a self, req: ClaimRequest<'a>) -> BoxFuture<'a, Result<Claim, StoreError>> {
        Box::pin(async move {
            let r = self.inner.claim(req).await;
            self.world.store_ev(
                req.key,
                StoreOp::Claim {
                    owner: req.owner,
                    fingerprint: req.fingerprint.0,
                    lease: req.lease,
                    res: err_str(&r),
                },
            );
            r
        })
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        payload: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(async move {
            let r = self.inner.complete(key, owner, payload, ttl).await;
            self.world.store_ev(
                key,
                StoreOp::Complete {
                    owner,
                    ttl,
                    payload: payload.to_vec(),
                    res: err_str(&r),
                },
            );
            r
        })
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(async move {
            let r = self.inner.release(key, owner).await;
            self.world.store_ev(
                key,
                StoreOp::Release {
                    owner,
                    res: err_str(&r),
                },
            );
            r
        })
    }

    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(async move {
            let r = self.inner.renew(key, owner, lease).await;
            self.world.store_ev(
                key,
                StoreOp::Renew {
                    owner,
                    lease,
                    res: err_str(&r),
                },
            );
            r
        })
    }

    fn inspect<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecordState>, StoreError>> {
        self.inner.inspect(key)
    }

    fn forget<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let r = self.inner.forget(key).await;
            self.world
                .store_ev(key, StoreOp::Forget { res: err_str(&r) });
            r
        })
    }

    fn purge_expired(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.inner.purge_expired()
    }

    fn verify(&self) -> BoxFuture<'_, Result<Vec<Warning>, StoreError>> {
        self.inner.verify()
    }
}

/// One simulated process's connection to the shared store. When the process
/// crashes the connection is cut, so nothing the dead process's dropped futures
/// spawn (a `ClaimGuard` release, say) can reach the store, as with a real crash.
/// It also delays some replies after the command applied (a slow network on the
/// way back), so a caller may time out on, and retry, a command that took effect.
pub(crate) struct ProcStore {
    inner: Arc<dyn Store>,
    cut: Arc<AtomicBool>,
    reply_delay: Option<(u64, Duration)>,
    rng: Mutex<Rng>,
    healed: Arc<AtomicBool>,
}

impl ProcStore {
    pub(crate) fn new(
        inner: Arc<dyn Store>,
        cut: Arc<AtomicBool>,
        reply_delay: Option<(u64, Duration)>,
        seed: u64,
        healed: Arc<AtomicBool>,
    ) -> Self {
        ProcStore {
            inner,
            cut,
            reply_delay,
            rng: Mutex::new(Rng::new(seed)),
            healed,
        }
    }

    fn late<'a, T: Send + 'a>(
        &'a self,
        f: BoxFuture<'a, Result<T, StoreError>>,
    ) -> BoxFuture<'a, Result<T, StoreError>> {
        let Some((pct, max)) = self
            .reply_delay
            .filter(|_| !self.healed.load(Ordering::SeqCst))
        else {
            return f;
        };
        let delay = {
            let mut r = self.rng.lock().unwrap_or_else(|p| p.into_inner());
            r.chance(pct).then(|| r.ms(0, max.as_millis() as u64))
        };
        match delay {
            None => f,
            Some(d) => Box::pin(async move {
                let r = f.await;
                tokio::time::sleep(d).await;
                r
            }),
        }
    }

    fn dead<T>(&self) -> Option<BoxFuture<'static, Result<T, StoreError>>>
    where
        T: Send + 'static,
    {
        self.cut.load(Ordering::SeqCst).then(|| {
            Box::pin(std::future::ready(Err(StoreError::Unavailable(
                "process crashed".into(),
            )))) as BoxFuture<'static, _>
        })
    }
}

impl Store for ProcStore {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn claim<'a>(&'a self, req: ClaimRequest<'a>) -> BoxFuture<'a, Result<Claim, StoreError>> {
        self.dead()
            .unwrap_or_else(|| self.late(self.inner.claim(req)))
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        payload: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        self.dead()
            .unwrap_or_else(|| self.late(self.inner.complete(key, owner, payload, ttl)))
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        self.dead()
            .unwrap_or_else(|| self.late(self.inner.release(key, owner)))
    }

    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        self.dead()
            .unwrap_or_else(|| self.late(self.inner.renew(key, owner, lease)))
    }

    fn inspect<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecordState>, StoreError>> {
        self.dead().unwrap_or_else(|| self.inner.inspect(key))
    }

    fn forget<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.dead().unwrap_or_else(|| self.inner.forget(key))
    }

    fn purge_expired(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.dead().unwrap_or_else(|| self.inner.purge_expired())
    }

    fn verify(&self) -> BoxFuture<'_, Result<Vec<Warning>, StoreError>> {
        self.dead().unwrap_or_else(|| self.inner.verify())
    }
}
