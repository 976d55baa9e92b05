//! What a guarded call returns: the value, whether it was executed or replayed, and
//! the fence of the claim that produced it.

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

/// How a guarded call got its value. The names are the `outcome` label of the
/// `idem_calls_total` metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum How {
    /// The body ran now and its result was stored.
    Executed,
    /// A stored result was returned; the body did not run.
    Replayed,
    /// A concurrent duplicate waited for the first caller and returned its result.
    Waited,
    /// The body hit the backstop constraint and `on_conflict` loaded the existing result.
    Backstop,
    /// The store was unavailable; the body ran under `degrade = "backstop"`.
    Degraded,
}

impl How {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            How::Executed => "executed",
            How::Replayed => "replayed",
            How::Waited => "waited",
            How::Backstop => "backstop",
            How::Degraded => "degraded",
        }
    }
}

/// A guarded call's value and how it was obtained.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome<T> {
    value: T,
    how: How,
    fence: Fence,
    stored: bool,
}

impl<T> Outcome<T> {
    pub(crate) fn new(value: T, how: How, fence: Fence) -> Self {
        Outcome {
            value,
            how,
            fence,
            stored: true,
        }
    }

    pub(crate) fn with_stored(mut self, stored: bool) -> Self {
        self.stored = stored;
        self
    }

    /// True when the store holds this value for later replays: a replayed value,
    /// or an executed one whose `complete` the store confirmed.
    ///
    /// False when the body ran but its result is not known to be stored: the
    /// lease lapsed (a hung body past `max_hold`, a long outage) and another caller
    /// took the key, so replays return *that* caller's value; or the store did not
    /// confirm the write. Also false on the degraded path, which stores nothing.
    /// The `outcome` label of such a call is `not_stored`.
    pub fn is_stored(&self) -> bool {
        self.stored
    }

    /// True when this call did not run the body's effects itself
    /// (replayed, waited, or loaded through the backstop).
    pub fn is_replay(&self) -> bool {
        matches!(self.how, How::Replayed | How::Waited | How::Backstop)
    }

    /// How the value was obtained.
    pub fn how(&self) -> How {
        self.how
    }

    /// The fence of the claim whose body produced the value.
    pub fn fence(&self) -> Fence {
        self.fence
    }

    /// A reference to the value.
    pub fn value(&self) -> &T {
        &self.value
    }

    /// The value.
    pub fn into_inner(self) -> T {
        self.value
    }

    /// Maps the value, keeping how it was obtained.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Outcome<U> {
        Outcome {
            value: f(self.value),
            how: self.how,
            fence: self.fence,
            stored: self.stored,
        }
    }
}
