//! The label values of the metrics and the span, as types: a misspelt outcome,
//! technique or operation does not compile. The strings are a public contract
//! (DESIGN §6: dashboards and alerts are built on them) and are pinned by the
//! tests below and by `tests/it/observability.rs`.

use crate::outcome::How;

/// How one guarded call ended: the `outcome` label of `idem_calls_total` and the
/// `outcome` field of the `idem` span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum CallOutcome {
    /// The body ran and its result was stored.
    Executed,
    /// A stored result was returned; the body did not run.
    Replayed,
    /// A concurrent duplicate waited for the first caller and returned its result.
    Waited,
    /// A concurrent duplicate was rejected (or gave up waiting): `Error::InProgress`.
    InProgress,
    /// Same key, different payload: `Error::PayloadMismatch`.
    Mismatch,
    /// The store granted the claim, and the business constraint caught a
    /// duplicate its record had missed (lost, expired): a backstop hit.
    Backstop,
    /// The store was down; the body ran under `degrade = "backstop"`, whatever it
    /// then did. One the constraint stopped is also a backstop hit (counted in
    /// `Stats::degraded_backstop_hits`, not as `Backstop`).
    Degraded,
    /// The call failed before or around the body (store, codec, lookup errors).
    Failed,
    /// The body failed; its claim was released so a retry runs again.
    Released,
    /// The body ran but its result could not be stored: the lease lapsed and
    /// another owner took the key, so replays return that owner's value.
    NotStored,
    /// State machine: the transition was applied.
    Applied,
    /// State machine: the record already was in (or past) the target state.
    AlreadyApplied,
    /// State machine: the record is in a state the edge does not start from.
    InvalidTransition,
    /// Distributed lock: held by someone else past the wait.
    LockBusy,
    /// One-time token: unknown, consumed or expired.
    TokenInvalid,
    /// Consume log: the message (or its business id) was consumed already.
    DuplicateMessage,
}

impl CallOutcome {
    /// Every outcome, in declaration order (the index of per-outcome counters).
    pub const ALL: [CallOutcome; 16] = [
        CallOutcome::Executed,
        CallOutcome::Replayed,
        CallOutcome::Waited,
        CallOutcome::InProgress,
        CallOutcome::Mismatch,
        CallOutcome::Backstop,
        CallOutcome::Degraded,
        CallOutcome::Failed,
        CallOutcome::Released,
        CallOutcome::NotStored,
        CallOutcome::Applied,
        CallOutcome::AlreadyApplied,
        CallOutcome::InvalidTransition,
        CallOutcome::LockBusy,
        CallOutcome::TokenInvalid,
        CallOutcome::DuplicateMessage,
    ];

    /// The label value.
    pub const fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Executed => "executed",
            CallOutcome::Replayed => "replayed",
            CallOutcome::Waited => "waited",
            CallOutcome::InProgress => "in_progress",
            CallOutcome::Mismatch => "mismatch",
            CallOutcome::Backstop => "backstop",
            CallOutcome::Degraded => "degraded",
            CallOutcome::Failed => "failed",
            CallOutcome::Released => "released",
            CallOutcome::NotStored => "not_stored",
            CallOutcome::Applied => "applied",
            CallOutcome::AlreadyApplied => "already_applied",
            CallOutcome::InvalidTransition => "invalid_transition",
            CallOutcome::LockBusy => "lock_busy",
            CallOutcome::TokenInvalid => "token_invalid",
            CallOutcome::DuplicateMessage => "duplicate_message",
        }
    }

    /// A duplicate the library stopped: counted in the interception rate
    /// (replayed + waited + backstop + duplicate_message) / calls.
    pub const fn is_intercepted(self) -> bool {
        matches!(
            self,
            CallOutcome::Replayed
                | CallOutcome::Waited
                | CallOutcome::Backstop
                | CallOutcome::DuplicateMessage
        )
    }

    /// The position in [`CallOutcome::ALL`]: an index into per-outcome counters.
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for CallOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<How> for CallOutcome {
    fn from(how: How) -> Self {
        match how {
            How::Executed => CallOutcome::Executed,
            How::Replayed => CallOutcome::Replayed,
            How::Waited => CallOutcome::Waited,
            How::Backstop => CallOutcome::Backstop,
            How::Degraded => CallOutcome::Degraded,
        }
    }
}

/// Which technique a call used: the `technique` label and span field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Technique {
    /// `#[idempotent]` and `Idem::guard`.
    Idempotent,
    /// `#[state_transition]`.
    StateMachine,
    /// `#[distributed_lock]`.
    Lock,
    /// One-time tokens.
    Token,
    /// `#[consume_once]`, the message-queue consume log.
    Consume,
    /// The HTTP `Idempotency-Key` layer.
    Http,
    /// `Idem::state_cas`, the Redis state check-and-set.
    StateCas,
}

impl Technique {
    /// The label value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Technique::Idempotent => "idempotent",
            Technique::StateMachine => "state_machine",
            Technique::Lock => "lock",
            Technique::Token => "token",
            Technique::Consume => "consume",
            Technique::Http => "http",
            Technique::StateCas => "state_cas",
        }
    }
}

impl std::fmt::Display for Technique {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A store operation: the `op` label of `idem_store_seconds` and
/// `idem_store_errors_total`, and what the op wrapper needs to know about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Op {
    /// Claim a key, or read its record.
    Claim,
    /// Extend a held claim's lease.
    Renew,
    /// Store the result of a held claim.
    Complete,
    /// Give up a held claim.
    Release,
    /// Read a key's record.
    Inspect,
    /// Delete a key's record.
    Forget,
    /// Delete expired records.
    Purge,
    /// The start-up check.
    Verify,
    /// Store a new one-time token.
    TokenIssue,
    /// Take a one-time token for a body (issued → consuming).
    TokenTake,
    /// Extend a taken token's lease.
    TokenRenew,
    /// Delete a taken token after its body succeeded.
    TokenConsume,
    /// Give a taken token back after its body failed (consuming → issued).
    TokenReturn,
    /// Move a key's state from an expected value to a new one.
    StateCas,
}

impl Op {
    /// Every operation, in declaration order (the index of per-op metric keys).
    pub const ALL: [Op; 14] = [
        Op::Claim,
        Op::Renew,
        Op::Complete,
        Op::Release,
        Op::Inspect,
        Op::Forget,
        Op::Purge,
        Op::Verify,
        Op::TokenIssue,
        Op::TokenTake,
        Op::TokenRenew,
        Op::TokenConsume,
        Op::TokenReturn,
        Op::StateCas,
    ];

    /// The label value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Op::Claim => "claim",
            Op::Renew => "renew",
            Op::Complete => "complete",
            Op::Release => "release",
            Op::Inspect => "inspect",
            Op::Forget => "forget",
            Op::Purge => "purge",
            Op::Verify => "verify",
            Op::TokenIssue => "token_issue",
            Op::TokenTake => "token_take",
            Op::TokenRenew => "token_renew",
            Op::TokenConsume => "token_consume",
            Op::TokenReturn => "token_return",
            Op::StateCas => "state_cas",
        }
    }

    /// An operation on a claim the caller already holds. The op wrapper lets these
    /// through an open breaker and retries them for the whole budget: refusing or
    /// abandoning them would cost a running body its lease, or a finished body its
    /// stored result, and a duplicate would run the body again.
    pub const fn holds_claim(self) -> bool {
        matches!(
            self,
            Op::Renew
                | Op::Complete
                | Op::Release
                | Op::TokenRenew
                | Op::TokenConsume
                | Op::TokenReturn
        )
    }

    /// The position in [`Op::ALL`]: an index into per-operation metric keys.
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The label values are the documented ones (DESIGN §6), each once, and
    /// `ALL` is in index order (the counters rely on it).
    #[test]
    fn outcome_labels_are_the_documented_ones() {
        let labels: Vec<&str> = CallOutcome::ALL.iter().map(|o| o.as_str()).collect();
        assert_eq!(
            labels,
            [
                "executed",
                "replayed",
                "waited",
                "in_progress",
                "mismatch",
                "backstop",
                "degraded",
                "failed",
                "released",
                "not_stored",
                "applied",
                "already_applied",
                "invalid_transition",
                "lock_busy",
                "token_invalid",
                "duplicate_message",
            ]
        );
        for (i, o) in CallOutcome::ALL.iter().enumerate() {
            assert_eq!(o.index(), i, "{o}");
        }
        let intercepted: Vec<&str> = CallOutcome::ALL
            .iter()
            .filter(|o| o.is_intercepted())
            .map(|o| o.as_str())
            .collect();
        assert_eq!(
            intercepted,
            ["replayed", "waited", "backstop", "duplicate_message"]
        );
    }

    /// `How` and the outcome label agree: a replayed value is counted as one.
    #[test]
    fn how_maps_to_its_label() {
        for how in [
            How::Executed,
            How::Replayed,
            How::Waited,
            How::Backstop,
            How::Degraded,
        ] {
            assert_eq!(CallOutcome::from(how).as_str(), how.as_str());
        }
    }

    #[test]
    fn technique_and_op_labels() {
        let t = [
            Technique::Idempotent,
            Technique::StateMachine,
            Technique::Lock,
            Technique::Token,
            Technique::Consume,
            Technique::Http,
            Technique::StateCas,
        ]
        .map(Technique::as_str);
        assert_eq!(
            t,
            [
                "idempotent",
                "state_machine",
                "lock",
                "token",
                "consume",
                "http",
                "state_cas"
            ]
        );
        let ops = Op::ALL.map(Op::as_str);
        assert_eq!(
            ops,
            [
                "claim",
                "renew",
                "complete",
                "release",
                "inspect",
                "forget",
                "purge",
                "verify",
                "token_issue",
                "token_take",
                "token_renew",
                "token_consume",
                "token_return",
                "state_cas"
            ]
        );
        for (i, op) in Op::ALL.iter().enumerate() {
            assert_eq!(op.index(), i, "{op}");
        }
        let held: Vec<Op> = Op::ALL.into_iter().filter(|o| o.holds_claim()).collect();
        assert_eq!(
            held,
            [
                Op::Renew,
                Op::Complete,
                Op::Release,
                Op::TokenRenew,
                Op::TokenConsume,
                Op::TokenReturn
            ]
        );
    }
}
