//! [`Transition`]: what a state transition returns when it did not fail.

/// The result of a state transition that did not fail.
///
/// A repeated request (a payment callback delivered twice) is a success, not an
/// error: it finds the row already in the target state, or past it in an
/// acyclic machine, and gets [`Transition::AlreadyApplied`] without running the
/// body again.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition<T> {
    /// The row moved along the edge and the body ran in the same transaction;
    /// its value.
    Applied(T),
    /// The row already was in the target state or past it; nothing was written.
    AlreadyApplied {
        /// The stored value of the state the row is in.
        current: &'static str,
    },
}

impl<T> Transition<T> {
    /// True when this call moved the row.
    pub fn is_applied(&self) -> bool {
        matches!(self, Transition::Applied(_))
    }

    /// The body's value, when this call moved the row.
    pub fn applied(self) -> Option<T> {
        match self {
            Transition::Applied(v) => Some(v),
            Transition::AlreadyApplied { .. } => None,
        }
    }

    /// The state found, when the row was already there.
    pub fn current(&self) -> Option<&'static str> {
        match self {
            Transition::Applied(_) => None,
            Transition::AlreadyApplied { current } => Some(current),
        }
    }

    /// Maps the applied value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Transition<U> {
        match self {
            Transition::Applied(v) => Transition::Applied(f(v)),
            Transition::AlreadyApplied { current } => Transition::AlreadyApplied { current },
        }
    }
}
