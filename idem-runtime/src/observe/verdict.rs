//! What a technique hands the observe layer about one call: its outcome label,
//! and whether the business constraint caught a duplicate on the way.
//!
//! The two are separate because one call can be both: a call whose
//! store was down ran its body under `degrade = "backstop"` (outcome `degraded`)
//! and the constraint stopped the duplicate insert. It is counted once in
//! `idem_calls_total`, under `degraded`, and once in the backstop hits
//! (`idem_backstop_hits_total{path="degraded"}`, [`Stats::backstop_hits`]). A
//! guarded call whose claim the store granted although the record was lost
//! (expiry, failover, `FLUSHALL`) is `outcome="backstop"` and a backstop hit with
//! `path="guarded"`.
//!
//! [`Stats::backstop_hits`]: super::Stats::backstop_hits

use super::labels::CallOutcome;

/// How one call ended, as counted. Built from a [`CallOutcome`] (a backstop hit
/// exactly when the outcome is `backstop`) or by [`Verdict::degraded`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) outcome: CallOutcome,
    /// The business constraint caught a duplicate the record store did not.
    pub(crate) backstop_hit: bool,
}

impl Verdict {
    /// A call that ran its body without the store; `backstop_hit` when the
    /// constraint stopped it.
    pub(crate) const fn degraded(backstop_hit: bool) -> Self {
        Verdict {
            outcome: CallOutcome::Degraded,
            backstop_hit,
        }
    }

    /// Where the constraint caught the duplicate: the `path` label of
    /// `idem_backstop_hits_total` (`None`: no hit).
    pub(crate) fn backstop_path(self) -> Option<&'static str> {
        match (self.backstop_hit, self.outcome) {
            (false, _) => None,
            (true, CallOutcome::Degraded) => Some("degraded"),
            (true, _) => Some("guarded"),
        }
    }
}

impl From<CallOutcome> for Verdict {
    fn from(outcome: CallOutcome) -> Self {
        Verdict {
            outcome,
            backstop_hit: outcome == CallOutcome::Backstop,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(Verdict::from(CallOutcome::Executed).backstop_path(), None);
        let guarded = Verdict::from(CallOutcome::Backstop);
        assert_eq!(guarded.backstop_path(), Some("guarded"));
        assert_eq!(Verdict::degraded(true).backstop_path(), Some("degraded"));
        assert_eq!(Verdict::degraded(false).backstop_path(), None);
    }
}
