//! Same-process wake-ups: a caller that finds a key busy because a body in this
//! very process holds it waits on a `Notify` instead of polling the store, and is
//! woken the moment that body finishes.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

use super::Exec;

/// Keys whose body runs in this process.
#[derive(Debug, Default)]
pub(super) struct Local(Mutex<HashMap<String, Arc<Notify>>>);

impl Local {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Exec {
    /// Waits until a local holder of `key` finishes, at most `budget`. Returns false
    /// at once when no caller in this process holds the key (the holder is remote:
    /// the caller polls instead).
    pub(crate) async fn wait_local(&self, key: &str, budget: Duration) -> bool {
        let notify = match self.local.lock().get(key) {
            Some(n) => Arc::clone(n),
            None => return false,
        };
        let notified = notify.notified();
        let mut notified = pin!(notified);
        notified.as_mut().enable();
        // The holder may have finished between our claim and `enable`: re-check.
        if !self
            .local
            .lock()
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
pub(crate) struct Inflight<'a> {
    exec: &'a Exec,
    key: &'a str,
    notify: Arc<Notify>,
}

impl<'a> Inflight<'a> {
    pub(crate) fn register(exec: &'a Exec, key: &'a str) -> Self {
        let notify = Arc::new(Notify::new());
        exec.local
            .lock()
            .insert(key.to_owned(), Arc::clone(&notify));
        Inflight { exec, key, notify }
    }
}

impl Drop for Inflight<'_> {
    fn drop(&mut self) {
        let mut map = self.exec.local.lock();
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
