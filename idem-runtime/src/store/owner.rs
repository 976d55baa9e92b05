//! Claim owners: who holds a claim, one id per guarded call.

use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Who holds a claim: a random 128-bit id made per guarded call.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Owner(pub u128);

/// Owner counter values a thread takes at once (see [`Owner::random`]).
const OWNER_BLOCK: u64 = 1024;

impl Owner {
    /// A fresh owner id: unique within this process, and across processes and
    /// restarts with overwhelming probability.
    ///
    /// It is a random 128-bit base drawn once per process (a UUID v4) XOR a
    /// counter: two ids of one process always differ, ids of two processes can
    /// only meet if the 64 high random bits of their bases are equal. The UUID's
    /// version nibble sits in the high half, so an id is never 0. Drawing a UUID per
    /// call instead cost a `getrandom` system call per guarded call (about 6% of a
    /// memory-store replay in the overhead benchmark). A child `fork`ed without
    /// `exec` would share the parent's sequence; idem does not support that.
    ///
    /// Each thread takes counter values in blocks of 1,024: one
    /// shared counter bumped on every call moved its cache line between the
    /// cores on every guarded call.
    pub fn random() -> Self {
        static BASE: OnceLock<u128> = OnceLock::new();
        static NEXT: AtomicU64 = AtomicU64::new(0);
        thread_local! {
            /// This thread's next counter value and the end of its block.
            static BLOCK: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
        }
        let base = *BASE.get_or_init(|| uuid::Uuid::new_v4().as_u128());
        let n = BLOCK.with(|b| {
            let (mut next, mut end) = b.get();
            if next == end {
                next = NEXT.fetch_add(OWNER_BLOCK, Ordering::Relaxed);
                end = next + OWNER_BLOCK;
            }
            b.set((next + 1, end));
            next
        });
        Owner(base ^ u128::from(n))
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
            let o = Owner::random();
            assert_ne!(o.0, 0, "0 is the degraded path's marker");
            assert!(seen.insert(o), "{o:?} handed out twice");
        }
        let from_threads: Vec<Owner> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..1_000).map(|_| Owner::random()).collect::<Vec<_>>()))
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        for o in from_threads {
            assert!(seen.insert(o), "{o:?} handed out twice");
        }
    }
}
