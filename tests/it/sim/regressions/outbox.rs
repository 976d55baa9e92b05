//! The defects the outbox relay simulation found on the tree before the
//! relay's per-message verdicts, serialised ordered enqueues and namespaced
//! uniqueness, each pinned as an explicit schedule (seeds of the generator at
//! the commit that added them; `IDEM_SIM_OUTBOX_SEED=S` reruns one). Each
//! asserts every invariant of the simulation, and that the run still reaches
//! the situation that broke it.

use crate::sim::tech::outbox::{Crash, Enq, Knobs, ObxSchedule, RelaySpec, Txn, Visibility};
use crate::sim::tech::outbox_broker::{Answer, BrokerSpec, CallEnd, Down};
use crate::sim::tech::outbox_check::check;
use crate::sim::tech::outbox_dump::dump;
use crate::sim::tech::outbox_produce::plan;
use crate::sim::tech::outbox_run::{RunOut, run};

fn knobs(
    batch: usize,
    in_flight: usize,
    lease_ms: u64,
    idle_ms: u64,
    (retry_min_ms, retry_max_ms): (u64, u64),
    max_attempts: u32,
) -> Knobs {
    Knobs {
        batch,
        in_flight,
        lease_ms,
        idle_ms,
        retry_min_ms,
        retry_max_ms,
        max_attempts,
    }
}

/// A relay starting at `start_ms`; its crash: (publish call, messages the
/// broker stored first, restart after).
fn relay(start_ms: u64, crash: Option<(u32, usize, Option<u64>)>) -> RelaySpec {
    RelaySpec {
        start_ms,
        crash: crash.map(|(call, stored, restart_ms)| Crash {
            call,
            stored,
            restart_ms,
        }),
    }
}

/// A transaction; its enqueues as (topic, business id, ordered, big).
fn tx(
    at_ms: u64,
    dur_ms: u64,
    ns: usize,
    enq: &[(usize, usize, bool, bool)],
    commit: bool,
    retry_of: Option<usize>,
) -> Txn {
    Txn {
        at_ms,
        dur_ms,
        ns,
        enq: enq
            .iter()
            .map(|&(topic, biz, ordered, big)| Enq {
                topic,
                biz,
                ordered,
                big,
            })
            .collect(),
        commit,
        retry_of,
    }
}

fn broker(nack_pct: u64, lost_ack_pct: u64, downs: Vec<Down>) -> BrokerSpec {
    BrokerSpec {
        nack_pct,
        lost_ack_pct,
        downs,
    }
}

fn down(from_ms: u64, to_ms: u64, silent: bool) -> Down {
    Down {
        from_ms,
        to_ms,
        silent,
    }
}

/// Runs `s`; panics with its history if an invariant breaks.
fn run_checked(s: &ObxSchedule) -> RunOut {
    let out = run(s);
    if let Err(e) = check(s, &out) {
        panic!("{e}\n{}", dump(s, &out));
    }
    out
}

/// Seed 8. A message on a topic no stream captures shares a batch with a
/// good one. The broker stores the good one and has no stream for the
/// other; the adapter called that the broker down, so the whole batch was
/// given back and claimed again every round: the good message stored over
/// and over and never marked sent, the bad one never parked, and nothing
/// newer ever claimed. Now the bad one alone is refused, then parked.
#[test]
fn sim_regression_outbox_uncaptured_topic_blocks_nothing() {
    let s = seed_8();
    let out = run_checked(&s);
    let shared = out.broker.calls.iter().any(|c| match &c.end {
        CallEnd::Answered(a, _) => {
            a.contains(&Answer::NoStream) && a.iter().any(|x| matches!(x, Answer::Stored { .. }))
        }
        _ => false,
    });
    assert!(shared, "no batch held both messages\n{}", dump(&s, &out));
}

/// Seed 16. The same with ordered messages of the business id behind the
/// uncaptured one: they wait for it, which now ends (parked after
/// `max_attempts`) instead of never.
#[test]
fn sim_regression_outbox_uncaptured_topic_releases_its_ordered_successors() {
    run_checked(&seed_16());
}

/// Seed 107. Two transactions of one ordered business id overlap on a
/// database with concurrent writers: the one that began later (a higher
/// seq) committed first, and the broker received the business id's
/// messages in commit order, against enqueue order. Ordered enqueues of one
/// business id now wait for each other, so the later one commits later.
#[test]
fn sim_regression_outbox_ordered_overlap_publishes_in_one_order() {
    let s = seed_107();
    let p = plan(&s);
    assert!(
        p[3].0 > s.txs[3].at_ms,
        "tx 3 no longer waits for tx 1: {p:?}"
    );
    run_checked(&s);
}

/// Seed 143. The same overlap with the broker down while the later
/// transaction committed: once it was back, the relay published in seq
/// order, against commit order. Which order won was relay timing.
#[test]
fn sim_regression_outbox_ordered_overlap_through_an_outage() {
    run_checked(&seed_143());
}

/// Seed 3. Two namespaces enqueue one (topic, business id): the second
/// enqueue found the first namespace's row, returned its own message id,
/// and that id was never stored or published. The namespace is now part
/// of the row's uniqueness.
#[test]
fn sim_regression_outbox_two_namespaces_keep_both_messages() {
    let s = seed_3();
    let out = run_checked(&s);
    let a = s
        .txs
        .iter()
        .any(|t| t.ns == 0 && t.enq.iter().any(|e| e.topic == 0 && e.biz == 2));
    let b = s
        .txs
        .iter()
        .any(|t| t.ns == 1 && t.enq.iter().any(|e| e.topic == 0 && e.biz == 2));
    assert!(a && b && out.rows.len() >= 2, "{}", dump(&s, &out));
}

fn seed_8() -> ObxSchedule {
    ObxSchedule {
        seed: 8,
        vis: Visibility::Mvcc,
        knobs: knobs(2, 2, 876, 15, (15, 34), 2),
        relays: vec![relay(86, None), relay(0, Some((1, 0, None)))],
        txs: vec![
            tx(
                30,
                7,
                1,
                &[(2, 1, false, false), (3, 1, false, false)],
                true,
                None,
            ),
            tx(
                215,
                103,
                0,
                &[(1, 0, false, false), (2, 0, false, false)],
                true,
                None,
            ),
            tx(101, 1, 0, &[(0, 1, false, false)], false, None),
        ],
        broker: broker(0, 0, vec![]),
    }
}

fn seed_16() -> ObxSchedule {
    ObxSchedule {
        seed: 16,
        vis: Visibility::Serial,
        knobs: knobs(4, 2, 823, 19, (5, 53), 2),
        relays: vec![relay(0, Some((2, 1, Some(27))))],
        txs: vec![
            tx(117, 19, 0, &[(0, 0, true, false)], true, None),
            tx(14, 47, 0, &[(3, 0, true, false)], true, None),
            tx(157, 23, 0, &[(1, 0, true, false)], true, None),
            tx(221, 28, 0, &[(2, 0, true, false)], true, None),
        ],
        broker: broker(25, 10, vec![down(165, 332, true), down(39, 235, false)]),
    }
}

fn seed_107() -> ObxSchedule {
    ObxSchedule {
        seed: 107,
        vis: Visibility::Mvcc,
        knobs: knobs(3, 3, 639, 13, (9, 40), 4),
        relays: vec![relay(24, None)],
        txs: vec![
            tx(
                69,
                68,
                0,
                &[(2, 0, true, false), (0, 0, true, false)],
                true,
                None,
            ),
            tx(181, 54, 0, &[(1, 1, true, false)], true, None),
            tx(220, 6, 0, &[(1, 0, true, false)], true, None),
            tx(
                198,
                20,
                0,
                &[(2, 1, true, false), (0, 1, true, false)],
                true,
                None,
            ),
        ],
        broker: broker(0, 0, vec![down(350, 533, false)]),
    }
}

fn seed_143() -> ObxSchedule {
    ObxSchedule {
        seed: 143,
        vis: Visibility::Mvcc,
        knobs: knobs(3, 1, 651, 5, (7, 36), 2),
        relays: vec![relay(0, None), relay(41, Some((2, 2, None)))],
        txs: vec![
            tx(
                86,
                89,
                0,
                &[(0, 0, true, false), (2, 0, true, false)],
                false,
                None,
            ),
            tx(90, 112, 0, &[(0, 0, true, false)], true, None),
            tx(107, 112, 0, &[(2, 0, true, false)], true, None),
            tx(122, 74, 0, &[(1, 0, true, false)], true, None),
        ],
        broker: broker(0, 0, vec![down(86, 143, true), down(55, 325, true)]),
    }
}

fn seed_3() -> ObxSchedule {
    ObxSchedule {
        seed: 3,
        vis: Visibility::Mvcc,
        knobs: knobs(2, 1, 736, 11, (14, 54), 3),
        relays: vec![
            relay(0, Some((1, 1, Some(154)))),
            relay(30, None),
            relay(0, None),
        ],
        txs: vec![
            tx(242, 108, 0, &[(2, 0, true, false)], true, None),
            tx(196, 37, 0, &[(0, 2, true, false)], true, None),
            tx(264, 24, 0, &[(0, 2, true, false)], true, Some(1)),
            tx(290, 29, 0, &[(0, 2, true, false)], true, Some(2)),
            tx(348, 37, 0, &[(0, 2, true, false)], true, Some(3)),
            tx(
                81,
                2,
                1,
                &[(0, 2, true, false), (1, 2, true, false)],
                true,
                None,
            ),
        ],
        broker: broker(10, 10, vec![down(38, 245, false)]),
    }
}
