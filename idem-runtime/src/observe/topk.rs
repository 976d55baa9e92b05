//! Space-Saving top-K: the most-repeated keys of a scope in bounded memory.
//! Any key seen more than `hits / TOP_CAPACITY` times is guaranteed to be
//! listed, each listed count overestimates the truth by at most its `error`,
//! and no key missing from the summary was seen more than its [`floor`]
//! (the smallest count) times.
//!
//! [`floor`]: SpaceSaving::floor

use crate::digest::digest;

pub(super) const TOP_CAPACITY: usize = 64;

/// Space-Saving summary: `TOP_CAPACITY` slots in a min-heap by count, so a key
/// not yet tracked replaces the minimum in O(log capacity) (a linear scan for the
/// minimum cost 15% of a memory-store replay in the overhead benchmark).
///
/// Tracked keys are found by a scan of their 64-bit digests, not a hash map: a
/// map hashed every miss three times (look-up, removal of the evicted key,
/// insertion), and with 1,000 keys cycling through 64 slots every duplicate
/// is a miss (issue 29). The digest needs no secret seed: at most
/// `TOP_CAPACITY` entries are scanned whatever the keys, and a collision only
/// costs one string comparison.
#[derive(Debug, Default)]
pub(super) struct SpaceSaving {
    slots: Vec<Slot>,
    /// `digest(slots[i].key)`, by slot id.
    digests: Vec<u64>,
    /// Slot ids, a min-heap by count.
    heap: Vec<usize>,
    /// Slot id -> its position in `heap`.
    pos: Vec<usize>,
}

#[derive(Debug)]
struct Slot {
    key: String,
    count: u64,
    /// Overestimate: the count the slot had when this key took it over.
    error: u64,
}

impl SpaceSaving {
    pub(super) fn hit(&mut self, key: &str) {
        let d = digest(key);
        if let Some(s) = self.find(d, key) {
            self.slots[s].count += 1;
            self.sift_down(self.pos[s]);
            return;
        }
        if self.slots.len() < TOP_CAPACITY {
            let s = self.slots.len();
            self.slots.push(Slot {
                key: key.to_owned(),
                count: 1,
                error: 0,
            });
            self.digests.push(d);
            self.heap.push(s);
            self.pos.push(s);
            self.sift_up(s);
            return;
        }
        // Replace the minimum: the newcomer inherits its count as possible error.
        // The key buffer is reused, so a full summary allocates nothing.
        let s = self.heap[0];
        let slot = &mut self.slots[s];
        slot.key.clear();
        slot.key.push_str(key);
        slot.error = slot.count;
        slot.count += 1;
        self.digests[s] = d;
        self.sift_down(0);
    }

    /// The slot tracking `key` (whose digest is `d`). Eight digests at a time
    /// into a bit mask, without an early exit, so the compiler vectorises the
    /// scan: every hit of a key outside the summary scans all the slots.
    fn find(&self, d: u64, key: &str) -> Option<usize> {
        for (c, chunk) in self.digests.chunks(8).enumerate() {
            let mut mask = 0u32;
            for (i, &x) in chunk.iter().enumerate() {
                mask |= u32::from(x == d) << i;
            }
            while mask != 0 {
                let s = c * 8 + mask.trailing_zeros() as usize;
                if self.slots[s].key == key {
                    return Some(s);
                }
                mask &= mask - 1;
            }
        }
        None
    }

    /// The tracked keys with their counts and overestimates, in no order.
    pub(super) fn entries(&self) -> impl Iterator<Item = (&str, u64, u64)> {
        self.slots
            .iter()
            .map(|s| (s.key.as_str(), s.count, s.error))
    }

    /// The most any key missing from the summary can have been seen: the
    /// smallest count once every slot is taken (0 before: counts are exact).
    pub(super) fn floor(&self) -> u64 {
        match self.slots.len() < TOP_CAPACITY {
            true => 0,
            false => self.count(0),
        }
    }

    fn count(&self, i: usize) -> u64 {
        self.slots[self.heap[i]].count
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.heap.swap(i, j);
        self.pos[self.heap[i]] = i;
        self.pos[self.heap[j]] = j;
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.count(parent) <= self.count(i) {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut min = i;
            if l < n && self.count(l) < self.count(min) {
                min = l;
            }
            if r < n && self.count(r) < self.count(min) {
                min = r;
            }
            if min == i {
                return;
            }
            self.swap(i, min);
            i = min;
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
        assert_eq!(ss.digests.len(), TOP_CAPACITY);
        assert_eq!(ss.slots.iter().map(|s| s.count).sum::<u64>(), n);
        for s in &ss.slots {
            let t = truth[&s.key];
            assert!(s.count - s.error <= t && t <= s.count, "{s:?} true {t}");
            let at = ss.slots.iter().position(|x| x.key == s.key).unwrap();
            assert_eq!(ss.find(digest(&s.key), &s.key), Some(at));
            assert_eq!(ss.digests[at], digest(&s.key));
        }
        for (k, t) in &truth {
            if *t > n / TOP_CAPACITY as u64 {
                assert!(
                    ss.find(digest(k), k).is_some(),
                    "heavy key {k} ({t}) missing"
                );
            }
        }
        for h in 0..8 {
            let k = format!("hot{h}");
            assert!(ss.find(digest(&k), &k).is_some());
        }
    }
}
