//! What the engine does around each store call: the breaker, the operation
//! timeout and same-owner retries (`Idem::op`), waking same-process waiters when a
//! local body ends (`Inflight`, `Idem::wait_local`), and releasing a claim whose
//! body never started when the call is dropped (`ClaimGuard`).

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::handle::Idem;
use crate::store::{BoxFuture, Owner, StoreError};

impl Idem {
    /// One store operation: breaker check, timeout, retries with the same owner
    /// (every operation is idempotent per owner), metrics.
    ///
    /// The breaker spares *new* calls the timeout during an outage. Operations on a
    /// claim this caller already holds (`renew`, `complete`, `release`) are not
    /// gated by it: refusing them would let a running body's lease lapse, or drop
    /// its result, for a whole cooldown after a blip the store has long recovered
    /// from, and a duplicate would then run the body again (simulation seed 547).
    /// Their outcome still feeds the breaker. For the same reason they retry for
    /// their whole budget, where a claim gives up after three quick attempts: a
    /// `complete` lost to a 50 ms blip means the next duplicate runs the body
    /// again (simulation seed 121).
    pub(crate) async fn op<'s, R>(
        &'s self,
        name: &'static str,
        key: &str,
        mut f: impl FnMut() -> BoxFuture<'s, Result<R, StoreError>>,
    ) -> Result<R, StoreError> {
        let inner = &self.inner;
        let held = matches!(name, "renew" | "complete" | "release");
        if !held && !inner.breaker.allow() {
            return Err(StoreError::Unavailable("circuit breaker open".into()));
        }
        let mut t0 = Instant::now();
        let deadline = t0 + inner.op_timeout;
        let mut attempt = 0u32;
        loop {
            if attempt > 0 {
                t0 = Instant::now();
            }
            let r = match tokio::time::timeout_at(deadline, f()).await {
                Ok(r) => r,
                Err(_) => Err(StoreError::unavailable(format!(
                    "no answer within {:?}",
                    inner.op_timeout
                ))),
            };
            inner
                .store_keys
                .record(name, t0.elapsed().as_secs_f64(), r.is_ok());
            match r {
                Ok(v) => {
                    inner.breaker.success();
                    return Ok(v);
                }
                Err(StoreError::Unavailable(msg)) => {
                    attempt += 1;
                    let pause = Duration::from_millis(5 << attempt.min(4));
                    let give_up = !held && attempt >= 3;
                    if give_up || Instant::now() + pause >= deadline {
                        inner.breaker.failure();
                        tracing::debug!(key, op = name, error = %msg, "store unavailable");
                        return Err(StoreError::Unavailable(msg));
                    }
                    tokio::time::sleep(pause).await;
                }
                Err(other) => return Err(other),
            }
        }
    }

    /// Waits until a local holder of `key` finishes, at most `budget`. Returns false
    /// at once when no caller in this process holds the key (the holder is remote:
    /// the caller polls instead).
    pub(super) async fn wait_local(&self, key: &str, budget: Duration) -> bool {
        let notify = {
            let map = self
                .inner
                .inflight
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            match map.get(key) {
                Some(n) => Arc::clone(n),
                None => return false,
            }
        };
        let notified = notify.notified();
        let mut notified = pin!(notified);
        notified.as_mut().enable();
        // The holder may have finished between our claim and `enable`: re-check.
        if !self
            .inner
            .inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .is_some_and(|n| Arc::ptr_eq(n, &notify))
        {
            return true;
        }
        let _ = tokio::time::timeout(budget, notified).await;
        true
    }
}

/// Registers a key as running in this process; wakes local waiters when dropped.
pub(super) struct Inflight<'a> {
    idem: &'a Idem,
    key: &'a str,
    notify: Arc<Notify>,
}

impl<'a> Inflight<'a> {
    pub(super) fn register(idem: &'a Idem, key: &'a str) -> Self {
        let notify = Arc::new(Notify::new());
        idem.inner
            .inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_owned(), Arc::clone(&notify));
        Inflight { idem, key, notify }
    }
}

impl Drop for Inflight<'_> {
    fn drop(&mut self) {
        let mut map = self
            .idem
            .inner
            .inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if map
            .get(self.key)
            .is_some_and(|n| Arc::ptr_eq(n, &self.notify))
        {
            map.remove(self.key);
        }
        // Waiters clone the Arc under this lock and hold it while they wait, and it
        // is no longer reachable from the map: a count of one means nobody waits,
        // and the notification (a lock inside `Notify`) can be skipped.
        let waiters = Arc::strong_count(&self.notify) > 1;
        drop(map);
        if waiters {
            self.notify.notify_waiters();
        }
    }
}

/// Releases a claim whose body never started when the call is dropped.
pub(super) struct ClaimGuard<'a> {
    idem: &'a Idem,
    key: &'a str,
    owner: Owner,
    armed: bool,
    started: bool,
}

impl<'a> ClaimGuard<'a> {
    pub(super) fn new(idem: &'a Idem, key: &'a str, owner: Owner) -> Self {
        ClaimGuard {
            idem,
            key,
            owner,
            armed: true,
            started: false,
        }
    }
    /// From now on the body's effects may commit: a drop leaves the claim to lapse.
    pub(super) fn body_started(&mut self) {
        self.started = true;
    }

    pub(super) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for ClaimGuard<'_> {
    fn drop(&mut self) {
        if !self.armed || self.started {
            // Once the body started, its effects may have committed: the claim stays
            // until its lease lapses, so no retry can run a second body meanwhile.
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let store = Arc::clone(&self.idem.inner.store);
        let key = self.key.to_owned();
        let owner = self.owner;
        rt.spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(5), store.release(&key, owner)).await;
        });
    }
}
