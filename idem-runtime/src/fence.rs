//! The fencing token every claim carries: a number that never goes backwards for
//! a key. A value type of its own because every technique hands one out (the
//! guard's claims, the lock's acquisitions, the token's consumption).

use std::fmt;

/// A fencing token: a number that never goes backwards for a key.
///
/// Every claim of a key gets a larger fence than every earlier claim of that key,
/// across record expiry, `forget`, a flushed cache or a failover (stores derive it
/// from server time combined with a counter, or from a database sequence). Write it
/// with your business row and guard updates with `WHERE fence <= $fence`: a body
/// whose lease lapsed then cannot overwrite the work of the caller that took over.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Fence(u64);

impl Fence {
    /// No fence: what a caller passes for an `idem::Fence` parameter (the guard
    /// replaces it) and what degraded calls that never reached the store carry.
    pub const NONE: Fence = Fence(0);

    /// Wraps a raw value.
    pub const fn new(v: u64) -> Self {
        Fence(v)
    }

    /// The raw value, for storing in a `BIGINT` column.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The value as `i64` for SQL drivers (fences stay far below `i64::MAX`).
    pub const fn as_i64(self) -> i64 {
        self.0 as i64
    }

    /// True when a store issued this fence.
    pub const fn is_valid(self) -> bool {
        self.0 != 0
    }
}

impl fmt::Debug for Fence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fence({})", self.0)
    }
}

impl fmt::Display for Fence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}
