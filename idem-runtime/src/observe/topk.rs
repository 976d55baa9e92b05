//! Space-Saving top-K: the most-repeated keys of a scope in bounded memory.
//! Any key seen more than `hits / TOP_CAPACITY` times is guaranteed to be
//! listed, each listed count overestimates the truth by at most its `error`,
//! and no key missing from the summary was seen more than its [`floor`]
//! (the smallest count) times.
//!
//! [`floor`]: SpaceSaving::floor

use std::hash::BuildHasher as _;

use hashbrown::HashTable;

pub(super) const TOP_CAPACITY: usize = 64;

/// Space-Saving summary: `TOP_CAPACITY` slots kept in ascending order of
/// count, so the minimum (the slot a newcomer takes over) is always first.
///
/// A hit adds one to a slot's count. In a sorted order that only needs the
/// slot moved past the others sharing its count: a binary search for the
/// last of them and one swap, the "stream summary" move of the Space-Saving
/// paper. A min-heap needed a sift chain there: with 1,000 keys cycling
/// through 64 slots every hit evicts the minimum and all counts are within
/// one, so each hit swapped from the root to a leaf (a profile had
/// the top-K at 14 % of a memory-store duplicate).
///
/// Tracked keys are found through `index`, a hash table of slot numbers keyed
/// by the key's hash (kept in `tags`, so a slot can be moved or removed
/// without hashing its key again): a probe or two instead of a scan of all
/// 64 slots, which every miss would pay (with 1,000 keys cycling through 64
/// slots, every duplicate is a miss). The table never holds more than
/// `TOP_CAPACITY` keys whatever the input, so a crafted collision costs at
/// most that many string comparisons, never a wrong answer.
#[derive(Debug)]
pub(super) struct SpaceSaving {
    slots: Vec<Slot>,
    /// `tag(slots[i].key)`, by slot id.
    tags: [u64; TOP_CAPACITY],
    /// Slot ids, hashed by their tag.
    index: HashTable<usize>,
    /// Slot ids in ascending order of count.
    order: Vec<usize>,
    /// `counts[i]` is the count of `order[i]`: ascending.
    counts: Vec<u64>,
    /// Slot id -> its position in `order`.
    pos: Vec<usize>,
}

#[derive(Debug)]
struct Slot {
    key: String,
    /// Overestimate: the count the slot had when this key took it over.
    error: u64,
}

impl Default for SpaceSaving {
    fn default() -> Self {
        SpaceSaving {
            slots: Vec::new(),
            tags: [0; TOP_CAPACITY],
            index: HashTable::with_capacity(TOP_CAPACITY),
            order: Vec::new(),
            counts: Vec::new(),
            pos: Vec::new(),
        }
    }
}

/// A key's tag: its hash, with a fixed seed (see [`SpaceSaving`] on why no
/// secret seed is needed).
fn tag(key: &str) -> u64 {
    foldhash::fast::FixedState::default().hash_one(key)
}

impl SpaceSaving {
    pub(super) fn hit(&mut self, key: &str) {
        self.hit_tagged(tag(key), key);
    }

    /// [`hit`](Self::hit) for a key whose tag is `t` (tests force collisions).
    fn hit_tagged(&mut self, t: u64, key: &str) {
        if let Some(s) = self.find(t, key) {
            self.bump(self.pos[s]);
            return;
        }
        if self.slots.len() < TOP_CAPACITY {
            // A new key's count, 1, is no larger than any other: it goes
            // first. Only the first `TOP_CAPACITY` keys of a scope come here.
            let s = self.slots.len();
            self.slots.push(Slot {
                key: key.to_owned(),
                error: 0,
            });
            self.tags[s] = t;
            self.index.insert_unique(t, s, |&x| self.tags[x]);
            self.order.insert(0, s);
            self.counts.insert(0, 1);
            self.pos.push(0);
            for (i, &t) in self.order.iter().enumerate() {
                self.pos[t] = i;
            }
            return;
        }
        // Replace the minimum: the newcomer inherits its count as possible error.
        // The key buffer is reused, so a full summary allocates nothing.
        let s = self.order[0];
        if let Ok(e) = self.index.find_entry(self.tags[s], |&x| x == s) {
            e.remove();
        }
        let slot = &mut self.slots[s];
        slot.key.clear();
        slot.key.push_str(key);
        slot.error = self.counts[0];
        self.tags[s] = t;
        self.index.insert_unique(t, s, |&x| self.tags[x]);
        self.bump(0);
    }

    /// Adds one to the count at position `p`: the slot first trades places
    /// with the last slot of the same count, so the order stays ascending.
    fn bump(&mut self, p: usize) {
        let c = self.counts[p];
        let last = p + self.counts[p..].partition_point(|&x| x <= c) - 1;
        if last != p {
            self.order.swap(p, last);
            self.pos[self.order[p]] = p;
            self.pos[self.order[last]] = last;
        }
        self.counts[last] = c + 1;
    }

    /// The slot tracking `key` (whose tag is `t`).
    fn find(&self, t: u64, key: &str) -> Option<usize> {
        self.index
            .find(t, |&s| self.tags[s] == t && self.slots[s].key == key)
            .copied()
    }

    /// The tracked keys with their counts and overestimates, in no order.
    pub(super) fn entries(&self) -> impl Iterator<Item = (&str, u64, u64)> {
        self.slots
            .iter()
            .enumerate()
            .map(|(s, slot)| (slot.key.as_str(), self.counts[self.pos[s]], slot.error))
    }

    /// The most any key missing from the summary can have been seen: the
    /// smallest count once every slot is taken (0 before: counts are exact).
    pub(super) fn floor(&self) -> u64 {
        match self.slots.len() < TOP_CAPACITY {
            true => 0,
            false => self.counts[0],
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// The Space-Saving guarantees on a skewed stream: every key seen more than
    /// `n / capacity` times is listed, and each listed count brackets the truth:
    /// `count - error <= true <= count`.
    #[test]
    fn space_saving_bounds_hold() {
        let mut ss = SpaceSaving::default();
        let mut truth: HashMap<String, u64> = HashMap::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let n = 20_000u64;
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // A quarter of the hits go to 8 hot keys, the rest to 5000 cold ones.
            let k = if x.is_multiple_of(4) {
                format!("hot{}", (x >> 8) % 8)
            } else {
                format!("cold{}", (x >> 8) % 5_000)
            };
            ss.hit(&k);
            *truth.entry(k).or_default() += 1;
        }
        assert_eq!(ss.slots.len(), TOP_CAPACITY);
        assert_sorted(&ss);
        assert_eq!(ss.entries().map(|(_, c, _)| c).sum::<u64>(), n);
        for (key, count, error) in ss.entries() {
            let t = truth[key];
            assert!(
                count - error <= t && t <= count,
                "{key} {count} {error} true {t}"
            );
            let at = ss.slots.iter().position(|x| x.key == key).unwrap();
            assert_eq!(ss.find(tag(key), key), Some(at));
            assert_eq!(ss.tags[at], tag(key));
        }
        for (k, t) in &truth {
            if *t > n / TOP_CAPACITY as u64 {
                assert!(ss.find(tag(k), k).is_some(), "heavy key {k} ({t}) missing");
            }
        }
        for h in 0..8 {
            let k = format!("hot{h}");
            assert!(ss.find(tag(&k), &k).is_some());
        }
    }

    /// The order is ascending by count, and `pos` inverts `order`.
    fn assert_sorted(ss: &SpaceSaving) {
        assert!(
            ss.counts.windows(2).all(|w| w[0] <= w[1]),
            "{:?}",
            ss.counts
        );
        for (i, &s) in ss.order.iter().enumerate() {
            assert_eq!(ss.pos[s], i);
        }
        assert_eq!(ss.order.len(), ss.slots.len());
        assert_eq!(ss.counts.len(), ss.slots.len());
    }

    /// Before the summary is full, counts are exact and nothing is an
    /// estimate; keys cycling through more slots than there are (the
    /// benchmark's 1,000 keys) keep the order and the total, and the floor is
    /// the smallest count.
    #[test]
    fn counts_exact_until_full_then_bounded() {
        let mut ss = SpaceSaving::default();
        for i in 0..TOP_CAPACITY {
            for _ in 0..=i {
                ss.hit(&format!("k{i}"));
            }
            assert_sorted(&ss);
        }
        for (key, count, error) in ss.entries() {
            let i: u64 = key[1..].parse().unwrap();
            assert_eq!((count, error), (i + 1, 0), "{key}");
        }
        assert_eq!(ss.floor(), 1);
        let before: u64 = ss.entries().map(|(_, c, _)| c).sum();
        for i in 0..1_000u64 {
            ss.hit(&format!("cycle{i}"));
            assert_sorted(&ss);
        }
        assert_eq!(ss.entries().map(|(_, c, _)| c).sum::<u64>(), before + 1_000);
        let min = ss.entries().map(|(_, c, _)| c).min().unwrap();
        assert_eq!(ss.floor(), min);
        // The heaviest early key outlives the churn: 64 hits against 1,000
        // spread over 64 slots.
        assert!(ss.entries().any(|(k, _, _)| k == "k63"));
    }

    /// Tags that collide cost a string comparison, never a wrong slot.
    #[test]
    fn colliding_tags_never_match_wrongly() {
        let mut ss = SpaceSaving::default();
        // "a" and "c" share a tag: both are kept, the key decides.
        ss.hit_tagged(7, "a");
        ss.hit("b");
        ss.hit_tagged(7, "c");
        assert_eq!(ss.find(7, "a"), Some(0));
        assert_eq!(ss.find(7, "c"), Some(2));
        assert_eq!(ss.find(7, "z"), None);
        assert_eq!(ss.find(tag("b"), "a"), None);
        ss.hit_tagged(7, "c");
        let c = ss.entries().find(|(k, _, _)| *k == "c").unwrap();
        assert_eq!((c.1, c.2), (2, 0));
    }

    /// Under churn with crowded tags (a few tags shared by many keys), every
    /// tracked key is found at its slot, no other key is, and no entry is
    /// lost or doubled.
    #[test]
    fn the_index_survives_eviction_churn() {
        let mut ss = SpaceSaving::default();
        let crowded = |i: u64| ((i % 5) * 61 + 253) ^ (i % 3) << 20;
        for i in 0..5_000u64 {
            let key = format!("k{}", (i * 7_919) % 300);
            let t = crowded((i * 7_919) % 300);
            ss.hit_tagged(t, &key);
            if i % 97 == 0 || i > 4_900 {
                let mut seen = [false; TOP_CAPACITY];
                for &s in ss.index.iter() {
                    assert!(!seen[s], "slot {s} indexed twice");
                    seen[s] = true;
                }
                assert_eq!(seen.iter().filter(|x| **x).count(), ss.slots.len());
                for (s, slot) in ss.slots.iter().enumerate() {
                    assert_eq!(ss.find(ss.tags[s], &slot.key), Some(s), "{}", slot.key);
                }
                assert_eq!(ss.find(crowded(1), "absent"), None);
            }
        }
        assert_sorted(&ss);
        assert_eq!(ss.entries().map(|(_, c, _)| c).sum::<u64>(), 5_000);
    }
}
