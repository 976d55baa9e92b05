//! What operators count: records by scene and state ([`Store::census`]) and
//! what a purge removes, per table ([`Store::purge_report`]). The `idem`
//! command's `stats` and `purge` print these.
//!
//! [`Store::census`]: super::Store::census
//! [`Store::purge_report`]: super::Store::purge_report

use std::collections::BTreeMap;

/// The records of one scene, by state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SceneCount {
    /// The scene as keys render it (escaped, without the namespace).
    pub scene: String,
    /// Live in-progress claims.
    pub in_progress: u64,
    /// Live finished records.
    pub done: u64,
    /// Rows past their expiry that a purge has not deleted yet (SQL stores;
    /// Redis and memory drop expired records themselves, so 0 there).
    pub expired: u64,
}

/// A record's state as [`Census::add`] counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// A live claim whose body runs.
    InProgress,
    /// A live finished record.
    Done,
    /// Past its expiry, not purged yet.
    Expired,
}

/// Record counts of one namespace, by scene (sorted by scene).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Census {
    /// One entry per scene that has records.
    pub scenes: Vec<SceneCount>,
}

impl Census {
    /// Counts `n` records of `scene` in state `state`.
    pub fn add(&mut self, scene: &str, state: Counted, n: u64) {
        let i = match self
            .scenes
            .binary_search_by(|s| s.scene.as_str().cmp(scene))
        {
            Ok(i) => i,
            Err(i) => {
                self.scenes.insert(
                    i,
                    SceneCount {
                        scene: scene.to_owned(),
                        ..SceneCount::default()
                    },
                );
                i
            }
        };
        let s = &mut self.scenes[i];
        match state {
            Counted::InProgress => s.in_progress += n,
            Counted::Done => s.done += n,
            Counted::Expired => s.expired += n,
        }
    }

    /// The sums over every scene: (in progress, done, expired).
    pub fn totals(&self) -> (u64, u64, u64) {
        self.scenes.iter().fold((0, 0, 0), |(a, b, c), s| {
            (a + s.in_progress, b + s.done, c + s.expired)
        })
    }
}

/// What [`Store::purge_report`](super::Store::purge_report) deleted (or, in a
/// dry run, would delete), per table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PurgeReport {
    /// Expired idempotency records.
    pub records: u64,
    /// Expired one-time tokens.
    pub tokens: u64,
    /// Consume log rows past their retention.
    pub consume_log: u64,
    /// Sent outbox messages past their retention.
    pub outbox: u64,
}

impl PurgeReport {
    /// Rows of every table.
    pub fn total(&self) -> u64 {
        self.records + self.tokens + self.consume_log + self.outbox
    }
}

/// Groups keys by scene: the census of stores that list their keys (memory,
/// Redis). `keys` yields (key, state); keys outside the namespace are skipped.
pub(crate) fn count_keys<'a>(
    namespace: &str,
    keys: impl IntoIterator<Item = (&'a str, Counted)>,
) -> Census {
    let prefix = crate::key::namespace_prefix(namespace);
    let mut census = Census::default();
    let mut by_scene: BTreeMap<&str, [u64; 3]> = BTreeMap::new();
    for (key, state) in keys {
        if let Some(scene) = crate::key::scene_after(key, &prefix) {
            by_scene.entry(scene).or_default()[state as usize] += 1;
        }
    }
    for (scene, [p, d, e]) in by_scene {
        census.add(scene, Counted::InProgress, p);
        census.add(scene, Counted::Done, d);
        census.add(scene, Counted::Expired, e);
    }
    census
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_group_by_scene_under_the_namespace_only() {
        let keys = [
            ("shop:order:1", Counted::Done),
            ("shop:order:2", Counted::InProgress),
            ("shop:pay:%3A1", Counted::Done),
            ("shop:bare", Counted::Done),
            ("other:order:1", Counted::Done),
            ("shopx:order:1", Counted::Done),
        ];
        let c = count_keys("shop", keys);
        let scenes: Vec<_> = c.scenes.iter().map(|s| s.scene.as_str()).collect();
        assert_eq!(scenes, ["bare", "order", "pay"]);
        assert_eq!((c.scenes[1].in_progress, c.scenes[1].done), (1, 1));
        assert_eq!(c.totals(), (1, 3, 0));
        let all = count_keys("", [("a:b:c", Counted::Expired), ("a", Counted::Done)]);
        assert_eq!(all.scenes.len(), 1);
        assert_eq!((all.scenes[0].done, all.scenes[0].expired), (1, 1));
    }
}
