//! [`StateMachine`]: what `#[derive(idem::StateMachine)]` implements, and what
//! the transition runner needs of a machine: its states' stored values, its
//! edges, and whether "past a state" means anything (only in an acyclic
//! machine: with a cycle every state can be past every other one).

use std::fmt;

/// A state machine over a field-less enum: usually derived with
/// `#[derive(idem::StateMachine)]`, which also checks the edges at compile time.
///
/// Hand-written implementations must keep the stored values distinct and
/// `ACYCLIC` true only when the edges form no cycle.
pub trait StateMachine: Copy + Eq + fmt::Debug + Send + Sync + 'static {
    /// The enum's name, for messages.
    const NAME: &'static str;
    /// Every state, in declaration order; the first is the initial state.
    const STATES: &'static [Self];
    /// The declared edges, `(from, to)`.
    const EDGES: &'static [(Self, Self)];
    /// True when the edges form no cycle, so "past a state" is defined.
    const ACYCLIC: bool;

    /// The value stored in the state column (`"WAIT_PAY"`).
    fn stored(self) -> &'static str;

    /// The state stored as `value`, if any.
    fn from_stored(value: &str) -> Option<Self> {
        Self::STATES.iter().copied().find(|s| s.stored() == value)
    }

    /// Is `from -> to` a declared edge?
    fn can(from: Self, to: Self) -> bool {
        Self::EDGES.contains(&(from, to))
    }

    /// Can `current` be reached from `to` by one or more edges? Always false
    /// in a machine with a cycle (see [`StateMachine::ACYCLIC`]).
    fn is_past(current: Self, to: Self) -> bool {
        if !Self::ACYCLIC {
            return false;
        }
        // Depth-first over the edge list: machines are small, and this runs only
        // when an update found nothing to do.
        let mut stack = vec![to];
        let mut seen = Vec::with_capacity(Self::STATES.len());
        while let Some(s) = stack.pop() {
            for &(a, b) in Self::EDGES {
                if a == s && !seen.contains(&b) {
                    if b == current {
                        return true;
                    }
                    seen.push(b);
                    stack.push(b);
                }
            }
        }
        false
    }
}

/// A stored value that is no state of the machine (`FromStr`, `Decode`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{value}` is not a stored value of the state machine `{machine}`")]
pub struct UnknownState {
    /// The machine's name.
    pub machine: &'static str,
    /// The value found.
    pub value: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum S {
        A,
        B,
        C,
        D,
    }
    impl StateMachine for S {
        const NAME: &'static str = "S";
        const STATES: &'static [S] = &[S::A, S::B, S::C, S::D];
        const EDGES: &'static [(S, S)] = &[(S::A, S::B), (S::B, S::C), (S::A, S::D)];
        const ACYCLIC: bool = true;
        fn stored(self) -> &'static str {
            ["A", "B", "C", "D"][self as usize]
        }
    }

    #[test]
    fn reachability_and_lookup() {
        assert!(S::is_past(S::C, S::B));
        assert!(S::is_past(S::C, S::A));
        assert!(!S::is_past(S::D, S::B), "a sibling branch is not past");
        assert!(!S::is_past(S::B, S::B), "a state is not past itself");
        assert!(!S::is_past(S::A, S::C), "earlier is not past");
        assert!(S::can(S::A, S::D) && !S::can(S::D, S::A));
        assert_eq!(S::from_stored("C"), Some(S::C));
        assert_eq!(S::from_stored("c"), None);
    }
}
