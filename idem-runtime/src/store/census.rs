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
/// dry run, would delete): one row per table set, in the order the store
/// purged them (a SQL store: `records`, `tokens`, then the tables of the
/// techniques that keep rows beside them; see
/// [`table_sets`](crate::store::sql::table_sets) with a SQL feature).
///
/// ```
/// use idem::store::PurgeReport;
/// let mut r = PurgeReport::default();
/// r.add("records", 3);
/// r.add("tokens", 1);
/// assert_eq!((r.rows("records"), r.rows("other"), r.total()), (3, 0, 4));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PurgeReport {
    /// One row per table set.
    pub tables: Vec<PurgeRow>,
}

/// The rows of one table set a purge deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PurgeRow {
    /// The table set's name (`records`, `tokens`, …).
    pub table: String,
    /// Rows deleted (or, in a dry run, that would be).
    pub rows: u64,
}

impl PurgeReport {
    /// Adds `rows` to the row of `table`, appending it when there is none.
    pub fn add(&mut self, table: &str, rows: u64) {
        match self.tables.iter_mut().find(|r| r.table == table) {
            Some(r) => r.rows += rows,
            None => self.tables.push(PurgeRow {
                table: table.to_owned(),
                rows,
            }),
        }
    }

    /// `self` with `rows` added to `table` (see [`add`](Self::add)).
    pub fn with(mut self, table: &str, rows: u64) -> Self {
        self.add(table, rows);
        self
    }

    /// The rows of `table` (0 when the report has no such row).
    pub fn rows(&self, table: &str) -> u64 {
        self.tables
            .iter()
            .find(|r| r.table == table)
            .map_or(0, |r| r.rows)
    }

    /// Expired idempotency records.
    pub fn records(&self) -> u64 {
        self.rows("records")
    }

    /// Expired one-time tokens.
    pub fn tokens(&self) -> u64 {
        self.rows("tokens")
    }

    /// Rows of every table.
    pub fn total(&self) -> u64 {
        self.tables.iter().map(|r| r.rows).sum()
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
