//! What an outbox run exercised (for the sweep's coverage check) and its
//! printed history (for a failing or rerun seed).

use std::fmt::Write as _;
use std::time::Duration;

use super::outbox::{ObxSchedule, TOPICS};
use super::outbox_broker::{Answer, CallEnd};
use super::outbox_check::ns_prefix;
use super::outbox_run::RunOut;

/// What a run exercised, for the sweep's coverage check.
pub(crate) fn outcomes(s: &ObxSchedule, out: &RunOut) -> Vec<String> {
    let mut o: Vec<String> = vec![format!("{:?}", s.vis).to_lowercase()];
    let mut add = |c: bool, n: &str| {
        if c {
            o.push(n.to_owned());
        }
    };
    add(!out.crashes.is_empty(), "crash");
    add(out.restarts > 0, "restart");
    add(out.rows.iter().any(|r| r.state == 2), "parked");
    add(!out.broker.refusals_told.is_empty(), "refused");
    add(
        out.broker.stored.iter().any(|m| m.duplicate),
        "duplicate-stored",
    );
    let ends = |f: &dyn Fn(&CallEnd) -> bool| out.broker.calls.iter().any(|c| f(&c.end));
    add(
        ends(&|e| matches!(e, CallEnd::Down { silent: true })),
        "down-silent",
    );
    add(
        ends(&|e| matches!(e, CallEnd::Down { silent: false })),
        "down-refusing",
    );
    add(
        ends(
            &|e| matches!(e, CallEnd::Answered(a, _) if a.iter().any(|x| matches!(x, Answer::StoredLostAck { .. }))),
        ),
        "lost-confirmation",
    );
    let dup = out
        .consumption
        .got
        .iter()
        .any(|g| g.1.starts_with("duplicate"));
    add(dup, "consumer-duplicate");
    add(s.txs.iter().any(|t| t.retry_of.is_some()), "retried-tx");
    add(s.txs.iter().any(|t| !t.commit), "rolled-back");
    // Two transactions of one ordered business id where the later one
    // begins and commits while the earlier is open (what a database with
    // concurrent writers must serialise).
    let overlap = (0..s.txs.len()).any(|i| {
        (0..s.txs.len()).any(|j| {
            i != j
                && s.txs[i].ns == s.txs[j].ns
                && s.txs[i]
                    .enq
                    .iter()
                    .any(|a| a.ordered && s.txs[j].enq.iter().any(|b| b.biz == a.biz))
                && s.txs[i].at_ms < s.txs[j].at_ms
                && s.txs[j].at_ms + s.txs[j].dur_ms < s.txs[i].at_ms + s.txs[i].dur_ms
        })
    });
    add(overlap, "ordered-overlap");
    o
}

/// The schedule and what happened, for a failing or rerun seed.
pub(crate) fn dump(s: &ObxSchedule, out: &RunOut) -> String {
    let mut d = String::new();
    let _ = writeln!(d, "seed {}: {:?}, {:?}", s.seed, s.vis, s.knobs);
    let _ = writeln!(d, "broker: {:?}", s.broker);
    for (i, r) in s.relays.iter().enumerate() {
        let _ = writeln!(d, "relay {i}: {r:?}");
    }
    let plan = super::outbox_produce::plan(s);
    for (i, t) in s.txs.iter().enumerate() {
        let enq: Vec<String> = t
            .enq
            .iter()
            .map(|e| {
                format!(
                    "{}{}/o{}{}{}",
                    ns_prefix(t.ns),
                    TOPICS[e.topic],
                    e.biz,
                    if e.ordered { " ordered" } else { "" },
                    if e.big { " big" } else { "" }
                )
            })
            .collect();
        let _ = writeln!(
            d,
            "tx {i}: {:?} ms{} {} {enq:?} -> {:?}",
            out.txs
                .get(i)
                .cloned()
                .flatten()
                .map_or((plan[i].0, plan[i].1), |o| (o.began, o.ended)),
            t.retry_of
                .map(|j| format!(" (retry of tx {j})"))
                .unwrap_or_default(),
            if t.commit { "commit" } else { "rollback" },
            out.txs
                .get(i)
                .cloned()
                .flatten()
                .map(|o| (o.ids, o.commit_no, o.seqs))
        );
    }
    for c in &out.broker.calls {
        let end = match &c.end {
            CallEnd::Answered(a, told) => format!("{a:?} -> told {told}"),
            CallEnd::Down { silent } => format!("down (silent: {silent})"),
            CallEnd::Crashed { stored } => format!("relay crashed after {stored} stored"),
        };
        let (at, relay, ids) = (c.at.as_millis(), c.relay, &c.ids);
        let _ = writeln!(d, "  {at:>5}ms relay {relay:?} publish {ids:?}: {end}");
    }
    for m in &out.broker.stored {
        let _ = writeln!(
            d,
            "  {:>5}ms stored {} {}/{}{}",
            m.at.as_millis(),
            m.id,
            m.topic,
            m.business_id,
            if m.duplicate { " (again)" } else { "" }
        );
    }
    for c in &out.crashes {
        let _ = writeln!(
            d,
            "crash: relay {:?} at {:?} holding {:?}",
            c.relay, c.at, c.held
        );
    }
    let _ = writeln!(d, "parks: {:?}", out.parks);
    let _ = writeln!(d, "consumed: {:?}", out.consumption.got);
    let _ = writeln!(d, "effects: {:?}", out.consumption.effects);
    for r in &out.rows {
        let _ = writeln!(
            d,
            "row seq {} {} {}/{} state {} attempts {}",
            r.seq, r.id, r.topic, r.business_id, r.state, r.attempts
        );
    }
    let lag = out.lag.last().map_or(Duration::ZERO, |x| x.1);
    let _ = writeln!(d, "drained at {:?}; timer lateness {lag:?}", out.drained);
    d
}
