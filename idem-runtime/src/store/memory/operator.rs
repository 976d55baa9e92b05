//! The memory store's answers to operators: census, listing, purges and the
//! conditional delete, each under the shard locks the protocol takes.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::time::Instant;

use super::{Entry, MemoryStore};
use crate::store::census::count_keys;
use crate::store::{Census, Counted, ListFilter, RecordState};

type Shard = Mutex<HashMap<String, Entry>>;

fn lock(s: &Shard) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

fn counted(e: &Entry, now: Instant) -> Counted {
    match e {
        _ if e.expires() <= now => Counted::Expired,
        Entry::Pending { .. } => Counted::InProgress,
        Entry::Done { .. } => Counted::Done,
    }
}

impl MemoryStore {
    /// Every key with its state, expired ones included.
    fn all_keys(&self) -> Vec<(String, Counted)> {
        let now = Instant::now();
        let mut keys = Vec::new();
        for s in self.shards.iter() {
            keys.extend(lock(s).iter().map(|(k, e)| (k.clone(), counted(e, now))));
        }
        keys
    }

    pub(super) fn census_now(&self, namespace: &str) -> Census {
        let keys = self.all_keys();
        count_keys(namespace, keys.iter().map(|(k, s)| (k.as_str(), *s)))
    }

    pub(super) fn list_now(
        &self,
        namespace: &str,
        filter: ListFilter<'_>,
    ) -> Vec<(String, Counted)> {
        let prefix = filter.key_prefix(namespace);
        let mut keys: Vec<_> = self
            .all_keys()
            .into_iter()
            .filter(|(k, s)| k.starts_with(&prefix) && *s != Counted::Expired)
            .filter(|(_, s)| !filter.in_progress_only || *s == Counted::InProgress)
            .collect();
        keys.sort_by(|a, b| a.0.cmp(&b.0));
        keys.truncate(filter.max());
        keys
    }

    /// Expired records whose key starts with `prefix`: deleted, or counted.
    pub(super) fn purge_where(&self, prefix: &str, dry_run: bool) -> u64 {
        let now = Instant::now();
        let mut n = 0;
        for s in self.shards.iter() {
            let mut map = lock(s);
            let expired = |k: &String, e: &Entry| e.expires() <= now && k.starts_with(prefix);
            if dry_run {
                n += map.iter().filter(|(k, e)| expired(k, e)).count() as u64;
            } else {
                let before = map.len();
                map.retain(|k, e| !expired(k, e));
                n += (before - map.len()) as u64;
            }
        }
        n
    }

    pub(super) fn forget_if_now(&self, key: &str, seen: &RecordState) -> bool {
        let mut map = self.shard(key);
        let still = Self::inspect_in(&map, key).map(|s| s.identity()) == Some(seen.identity());
        still && map.remove(key).is_some()
    }
}
