//! Same-process wake-ups: a caller that finds a key busy because a body in this
//! very process holds it waits on a `Notify` instead of polling the store, and is
//! woken the moment that body finishes.
//!
//! The same registry is the in-process claim of the degraded path
//! (`degrade_local`): while the store is down, the first caller of a key in this
//! process takes it ([`Exec::local_turn`]), its same-process duplicates wait for
//! it, and it hands them its result ([`Inflight::hand_over`]), so they do not each
//! run the body into the business constraint.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;

use super::Exec;
use crate::fingerprint::Fingerprint;

/// The registry's map. Hashed with foldhash (randomly seeded per map), not
/// SipHash: every held claim hashes its key on registration and removal, and
/// SipHash of a 60-byte key was most of the registry's cost per lock call.
type Slots = HashMap<String, Arc<Slot>, foldhash::fast::RandomState>;

/// Keys whose body runs in this process.
#[derive(Debug, Default)]
pub(super) struct Local(Mutex<Slots>);

impl Local {
    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One local holder of a key: wakes its waiters when it ends, and may leave them
/// its encoded result (the degraded path, where the store cannot keep it).
#[derive(Debug)]
pub(crate) struct Slot {
    notify: Notify,
    fingerprint: Fingerprint,
    handed: OnceLock<Vec<u8>>,
}

impl Slot {
    fn new(fingerprint: Fingerprint) -> Arc<Self> {
        Arc::new(Slot {
            notify: Notify::new(),
            fingerprint,
            handed: OnceLock::new(),
        })
    }

    /// The request fingerprint of the holder (`NONE` on the guarded path).
    pub(crate) fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// The encoded result the holder left, once it finished.
    pub(crate) fn handed(&self) -> Option<&[u8]> {
        self.handed.get().map(Vec::as_slice)
    }
}

impl Exec {
    /// Waits until a local holder of `key` finishes, at most `budget`. Returns false
    /// at once when no caller in this process holds the key (the holder is remote:
    /// the caller polls instead).
    pub(crate) async fn wait_local(&self, key: &str, budget: Duration) -> bool {
        let slot = match self.local.lock().get(key) {
            Some(s) => Arc::clone(s),
            None => return false,
        };
        self.wait_slot(key, &slot, budget).await;
        true
    }

    /// Waits until the holder of `slot` (registered under `key`) finishes, at most
    /// `budget`; true when it did.
    pub(crate) async fn wait_slot(&self, key: &str, slot: &Arc<Slot>, budget: Duration) -> bool {
        let notified = slot.notify.notified();
        let mut notified = pin!(notified);
        notified.as_mut().enable();
        // The holder may have finished between our lookup and `enable`: re-check.
        if !self.holds(key, slot) {
            return true;
        }
        tokio::time::timeout(budget, notified).await.is_ok() || !self.holds(key, slot)
    }

    fn holds(&self, key: &str, slot: &Arc<Slot>) -> bool {
        self.local
            .lock()
            .get(key)
            .is_some_and(|s| Arc::ptr_eq(s, slot))
    }

    /// The in-process claim of the degraded path: `Ok` when this caller now holds
    /// `key` in this process, `Err` with the current holder's slot otherwise.
    pub(crate) fn local_turn<'a>(
        &'a self,
        key: &'a str,
        fingerprint: Fingerprint,
    ) -> Result<Inflight<'a>, Arc<Slot>> {
        match self.local.lock().entry(key.to_owned()) {
            Entry::Occupied(held) => Err(Arc::clone(held.get())),
            Entry::Vacant(free) => {
                let slot = Slot::new(fingerprint);
                free.insert(Arc::clone(&slot));
                Ok(Inflight {
                    exec: self,
                    key,
                    slot,
                })
            }
        }
    }
}

/// Registers a key as running in this process; wakes local waiters when dropped.
pub(crate) struct Inflight<'a> {
    exec: &'a Exec,
    key: &'a str,
    slot: Arc<Slot>,
}

impl<'a> Inflight<'a> {
    /// A body that holds `key` in the store runs here.
    pub(crate) fn register(exec: &'a Exec, key: &'a str) -> Self {
        let slot = Slot::new(Fingerprint::NONE);
        exec.local.lock().insert(key.to_owned(), Arc::clone(&slot));
        Inflight { exec, key, slot }
    }

    /// Leaves the encoded result for the waiters woken when this is dropped.
    pub(crate) fn hand_over(&self, payload: Vec<u8>) {
        let _ = self.slot.handed.set(payload);
    }
}

impl Drop for Inflight<'_> {
    fn drop(&mut self) {
        let mut map = self.exec.local.lock();
        // One lookup: taken out, and put back in the rare case that it is
        // another holder's (a claim of the same key registered after ours).
        if let Some((key, slot)) = map.remove_entry(self.key)
            && !Arc::ptr_eq(&slot, &self.slot)
        {
            map.insert(key, slot);
        }
        // Waiters clone the Arc under this lock and hold it while they wait, and it
        // is no longer reachable from the map: a count of one means nobody waits,
        // and the notification (a lock inside `Notify`) can be skipped.
        let waiters = Arc::strong_count(&self.slot) > 1;
        drop(map);
        if waiters {
            self.slot.notify.notify_waiters();
        }
    }
}
