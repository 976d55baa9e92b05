//! The label strings are a public contract: pinned here.

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
            "conflict",
            "precondition_failed",
            "unguarded",
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
        How::Unguarded,
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
        Technique::TxGuard,
        Technique::Optimistic,
        Technique::Pessimistic,
        Technique::InsertOnce,
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
            "state_cas",
            "tx_guard",
            "optimistic",
            "pessimistic",
            "insert_once"
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
            "token_return",
            "state_cas",
            "outbox_claim",
            "outbox_sent",
            "outbox_retry",
            "outbox_stats"
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
            Op::TokenReturn,
            Op::OutboxSent,
            Op::OutboxRetry
        ]
    );
}
