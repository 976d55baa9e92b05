//! The label values of the metrics and the span, as types: a misspelt outcome,
//! technique or operation does not compile. The strings are a public contract
//! (DESIGN §6: dashboards and alerts are built on them) and are pinned by the
//! tests below and by `tests/it/observability/metrics.rs`.

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
    /// Optimistic lock: the row's version moved past the request's (someone
    /// else changed it first); nothing was written.
    Conflict,
    /// Optimistic lock: the version matched but the business precondition
    /// (`stock >= n`, ...) was false; nothing was written.
    PreconditionFailed,
    /// The guard is turned off (`IdemBuilder::disabled`): the body ran
    /// unguarded. Alert on it in production.
    Unguarded,
}

impl CallOutcome {
    /// Every outcome, in declaration order (the index of per-outcome counters).
    pub const ALL: [CallOutcome; 19] = [
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
        CallOutcome::Conflict,
        CallOutcome::PreconditionFailed,
        CallOutcome::Unguarded,
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
            CallOutcome::Conflict => "conflict",
            CallOutcome::PreconditionFailed => "precondition_failed",
            CallOutcome::Unguarded => "unguarded",
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
            How::Unguarded => CallOutcome::Unguarded,
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
    /// `Guard::in_tx` and `#[idempotent(tx = …)]`: the record in the caller's
    /// transaction.
    TxGuard,
    /// The optimistic lock over a version column.
    Optimistic,
    /// The pessimistic lock (`SELECT … FOR UPDATE`).
    Pessimistic,
    /// Insert-once: an insert guarded by a named unique constraint.
    InsertOnce,
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
            Technique::TxGuard => "tx_guard",
            Technique::Optimistic => "optimistic",
            Technique::Pessimistic => "pessimistic",
            Technique::InsertOnce => "insert_once",
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
    /// Spend a one-time token for a body (issued → spent).
    TokenTake,
    /// Give a spent token back after its body failed (spent → issued).
    TokenReturn,
    /// Move a key's state from an expected value to a new one.
    StateCas,
    /// Claim due outbox messages for a relay.
    OutboxClaim,
    /// Mark claimed outbox messages sent (after the broker confirmed them).
    OutboxSent,
    /// Reschedule or park an outbox message whose publish failed.
    OutboxRetry,
    /// Read the outbox gauges (pending, oldest age, parked, lag).
    OutboxStats,
}

impl Op {
    /// Every operation, in declaration order (the index of per-op metric keys).
    pub const ALL: [Op; 16] = [
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
        Op::TokenReturn,
        Op::StateCas,
        Op::OutboxClaim,
        Op::OutboxSent,
        Op::OutboxRetry,
        Op::OutboxStats,
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
            Op::TokenReturn => "token_return",
            Op::StateCas => "state_cas",
            Op::OutboxClaim => "outbox_claim",
            Op::OutboxSent => "outbox_sent",
            Op::OutboxRetry => "outbox_retry",
            Op::OutboxStats => "outbox_stats",
        }
    }

    /// An operation on a claim the caller already holds. The op wrapper lets these
    /// through an open breaker and retries them for the whole budget: refusing or
    /// abandoning them would cost a running body its lease, or a finished body its
    /// stored result, and a duplicate would run the body again. The outbox
    /// relay's marks are such operations too: a confirmed message left unmarked
    /// is published again when its claim lapses.
    pub const fn holds_claim(self) -> bool {
        matches!(
            self,
            Op::Renew
                | Op::Complete
                | Op::Release
                | Op::TokenReturn
                | Op::OutboxSent
                | Op::OutboxRetry
        )
    }

    /// An operation a detached finish keeps for its whole budget even while the
    /// breaker is open (waiting, without sending, until the store may be tried):
    /// a finish whose body succeeded and whose lapse would run it again: a
    /// guard's `complete`, whose lapse lets a duplicate execute the body a
    /// second time. Other detached finishes (a release, a token's give-back)
    /// stop at an open breaker: a claim then lapses with its lease, a token
    /// stays spent; that costs time or a token, never a second run.
    pub(crate) const fn outlasts_open_breaker(self) -> bool {
        matches!(self, Op::Complete)
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
#[path = "labels_tests.rs"]
mod tests;
