//! Rules both sides of the macro boundary apply: `idem-macros` checks the
//! values written as literals at compile time, `idem-runtime` checks the
//! values it is given at run time (expressions, settings, the builders), with
//! this one function each, so the two can never mean different things
//! (the `max_hold` rule was written in four places with two
//! meanings, `>` for locks and `>=` for `#[idempotent]`).

use std::fmt;
use std::time::Duration;

/// `max_hold` bounds how long a claim may be held in all, renewals included.
/// A claim always lives one lease (it is never renewed when `now + lease`
/// would pass `max_hold`), so a bound shorter than the lease cannot be kept:
/// refused. A bound equal to the lease is the "never renew" setting: the claim
/// lapses one lease after it was taken. Every technique with a lease (the
/// guard, the lock, one-time tokens) follows this rule.
///
/// ```
/// use std::time::Duration;
/// let s = Duration::from_secs;
/// assert!(idem_duration::check_hold(s(3), s(3)).is_ok());
/// assert!(idem_duration::check_hold(s(3), s(60)).is_ok());
/// assert!(idem_duration::check_hold(s(3), s(2)).is_err());
/// ```
pub fn check_hold(lease: Duration, max_hold: Duration) -> Result<(), HoldTooShort> {
    if max_hold < lease {
        Err(HoldTooShort { lease, max_hold })
    } else {
        Ok(())
    }
}

/// A `max_hold` shorter than its lease (see [`check_hold`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldTooShort {
    /// The lease.
    pub lease: Duration,
    /// The bound that was given.
    pub max_hold: Duration,
}

impl HoldTooShort {
    /// Why, for messages on both sides.
    pub const WHY: &'static str =
        "renewal stops at `max_hold`, so the claim could never be renewed";
}

impl fmt::Display for HoldTooShort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "max_hold ({:?}) must not be shorter than the lease ({:?}): {}",
            self.max_hold,
            self.lease,
            Self::WHY
        )
    }
}

impl std::error::Error for HoldTooShort {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule's one meaning, pinned: equal is allowed (no renewal), shorter
    /// is refused, longer is allowed. Both crates call this function.
    #[test]
    fn max_hold_may_equal_the_lease_but_not_be_shorter() {
        let ms = Duration::from_millis;
        assert_eq!(check_hold(ms(1000), ms(1000)), Ok(()));
        assert_eq!(check_hold(ms(1000), ms(1001)), Ok(()));
        assert_eq!(
            check_hold(ms(1000), ms(999)),
            Err(HoldTooShort {
                lease: ms(1000),
                max_hold: ms(999)
            })
        );
    }
}
