//! Claim owners: who holds a claim, one id per guarded call.

use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use super::holder::{self, Holder};

/// Who holds a claim: a 128-bit id made per guarded call, naming its process.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Owner(pub u128);

/// Owner counter values a thread takes at once (see [`Owner::fresh`]).
const OWNER_BLOCK: u64 = 1024;

impl Owner {
    /// A fresh owner id: unique within this process, and across processes and
    /// restarts with overwhelming probability; it names its process (see
    /// [`holder`](Self::holder)).
    ///
    /// An id is a base drawn once per process XOR a counter: two ids of one
    /// process always differ (until 2^46 ids on one process). The base
    /// describes the process: its start (Unix seconds), a 24-bit hash of the
    /// host name, the process id, a version nibble 8 (as a UUID v8 places
    /// it) and 46 random bits. Two processes' ids can only meet if they
    /// started in the same second with the same process id on hosts whose
    /// names hash alike and their random bits meet. A process whose id does
    /// not fit 22 bits draws a random base (a UUID v4) instead: such an id
    /// names no process, like the random ids other versions wrote.
    /// Drawing a UUID per call instead cost a `getrandom` system call per
    /// guarded call (about 6% of a memory-store replay in the overhead
    /// benchmark). A child `fork`ed without `exec` would share the parent's
    /// sequence; idem does not support that.
    ///
    /// Each thread takes counter values in blocks of 1,024: one
    /// shared counter bumped on every call moved its cache line between the
    /// cores on every guarded call.
    pub fn fresh() -> Self {
        static BASE: OnceLock<(u128, u64)> = OnceLock::new();
        static NEXT: AtomicU64 = AtomicU64::new(0);
        thread_local! {
            /// This thread's next counter value and the end of its block.
            static BLOCK: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
        }
        let (base, mask) = *BASE.get_or_init(holder::base);
        let n = BLOCK.with(|b| {
            let (mut next, mut end) = b.get();
            if next == end {
                next = NEXT.fetch_add(OWNER_BLOCK, Ordering::Relaxed);
                end = next + OWNER_BLOCK;
            }
            b.set((next + 1, end));
            next
        });
        Owner(base ^ u128::from(n & mask))
    }

    /// The former name of [`fresh`](Self::fresh): the id is not random (a
    /// per-process base and a counter), so the name said the wrong thing.
    #[deprecated(
        note = "renamed to `Owner::fresh`: the id is a per-process base and a counter, not random"
    )]
    pub fn random() -> Self {
        Self::fresh()
    }

    /// The process this id names: its host, process id and start. `None`
    /// for an id that names none (drawn at random, as other versions drew
    /// every id, or made by hand).
    pub fn holder(self) -> Option<Holder> {
        holder::decode(self.0)
    }

    /// The 16 big-endian bytes, as stores keep them.
    pub fn to_bytes(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    /// Reads 16 big-endian bytes.
    pub fn from_bytes(b: [u8; 16]) -> Self {
        Owner(u128::from_be_bytes(b))
    }
}

impl fmt::Debug for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Owner({:032x})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_distinct_and_never_zero() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let o = Owner::fresh();
            assert_ne!(o.0, 0, "0 is the degraded path's marker");
            assert!(seen.insert(o), "{o:?} handed out twice");
        }
        let from_threads: Vec<Owner> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..1_000).map(|_| Owner::fresh()).collect::<Vec<_>>()))
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        for o in from_threads {
            assert!(seen.insert(o), "{o:?} handed out twice");
        }
    }
}
