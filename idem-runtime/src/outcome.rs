//! What a guarded call returns: the value, whether it was executed or replayed, and
//! the fence of the claim that produced it.

pub use crate::fence::Fence;

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
    /// The guard is turned off (`IdemBuilder::disabled`): the body ran with no
    /// claim and nothing was stored.
    Unguarded,
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
            How::Unguarded => "unguarded",
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

    /// The fence of the claim whose body produced the value. It may be
    /// [`Fence::NONE`] when that call's body did not read its fence (an
    /// `#[idempotent]` function without an `idem::Fence` parameter,
    /// [`Guard::run`](crate::Guard::run) rather than `run_fenced`) and the store
    /// claimed without one (Redis).
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
