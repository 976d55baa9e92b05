//! The outbox simulation's invariants (listed in `outbox.rs`), checked on a
//! run's record: the transactions' outcomes, the table at the end, the
//! broker's log, the park hook's calls and the crashes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use super::outbox::{NAMESPACES, ObxSchedule, SIZE_LIMIT, TOPICS, UNCAPTURED};
use super::outbox_consume::fact_key;
use super::outbox_run::{RunOut, lag_between};

/// Slack of the time-bound invariant beyond one lease: polls, backoff, a
/// relay's restart, and scheduling on a machine shared with builds.
const SLACK: Duration = Duration::from_millis(800);

/// A committed fact: what the model expects of one message id.
#[derive(Debug)]
struct Fact {
    ns: usize,
    topic: usize,
    business_id: String,
    ordered: bool,
    payload: Vec<u8>,
    /// The first commit that returned this id.
    commit_no: usize,
}

fn facts(s: &ObxSchedule, out: &RunOut) -> (BTreeMap<String, Fact>, HashSet<String>) {
    let mut committed: BTreeMap<String, Fact> = BTreeMap::new();
    let mut rolled_back = HashSet::new();
    for (t, o) in s.txs.iter().zip(&out.txs) {
        let Some(o) = o else { continue };
        for (e, id) in t.enq.iter().zip(&o.ids) {
            let Ok(id) = id else { continue };
            match o.commit_no {
                Some(c) => {
                    let f = committed.entry(id.clone()).or_insert(Fact {
                        ns: t.ns,
                        topic: e.topic,
                        business_id: e.business_id(),
                        ordered: e.ordered,
                        payload: e.payload(),
                        commit_no: c,
                    });
                    f.commit_no = f.commit_no.min(c);
                }
                None => {
                    rolled_back.insert(id.clone());
                }
            }
        }
    }
    rolled_back.retain(|id| !committed.contains_key(id));
    (committed, rolled_back)
}

/// Permanently refused by the broker: no stream, or over the size limit.
fn doomed(f: &Fact) -> bool {
    f.topic == UNCAPTURED || f.payload.len() > SIZE_LIMIT
}

pub(crate) fn check(s: &ObxSchedule, out: &RunOut) -> Result<(), String> {
    let mut v: Vec<String> = Vec::new();
    let (committed, rolled_back) = facts(s, out);
    let rows: HashMap<&str, &super::outbox_run::RowOut> =
        out.rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let stored_ids: HashSet<&str> = out.broker.stored.iter().map(|m| m.id.as_str()).collect();
    let parks: HashMap<&str, usize> = out.parks.iter().fold(HashMap::new(), |mut m, p| {
        *m.entry(p.0.as_str()).or_default() += 1;
        m
    });
    for (i, o) in out.txs.iter().enumerate() {
        match o {
            None => v.push(format!(
                "[outbox-no-loss] transaction {i} never ran (the run hit its deadline)"
            )),
            Some(o) => {
                for e in o.ids.iter().filter_map(|r| r.as_ref().err()) {
                    v.push(format!("[outbox-enqueue] transaction {i}: {e}"));
                }
            }
        }
    }
    // No loss; the refused ones parked, and nothing else held back.
    let refused: Vec<&String> = committed
        .iter()
        .filter(|f| doomed(f.1))
        .map(|f| f.0)
        .collect();
    let mut unsent = Vec::new();
    for (id, f) in &committed {
        let what = fact_name(f);
        let Some(row) = rows.get(id.as_str()) else {
            v.push(format!(
                "[outbox-no-loss] {what}: enqueue returned {id}, committed, but no row holds it"
            ));
            continue;
        };
        match row.state {
            1 if !stored_ids.contains(id.as_str()) => v.push(format!(
                "[outbox-no-loss] {what} ({id}) is marked sent but the broker never stored it"
            )),
            1 if doomed(f) => v.push(format!(
                "[outbox-refused-never-blocks] {what} ({id}) is refused by the broker yet marked sent"
            )),
            1 => {}
            2 => {
                let told = out.broker.refusals_told.get(id).copied().unwrap_or(0);
                if told < s.knobs.max_attempts {
                    v.push(format!(
                        "[outbox-refused-never-blocks] {what} ({id}) parked after {told} refusals (max_attempts {})",
                        s.knobs.max_attempts
                    ));
                }
            }
            _ if doomed(f) => v.push(format!(
                "[outbox-refused-never-blocks] {what} ({id}) is refused by the broker and still pending (attempts {}), never parked",
                row.attempts
            )),
            _ => unsent.push(format!("{what} ({id})")),
        }
        if row.state == 2 && parks.get(id.as_str()) != Some(&1) {
            v.push(format!(
                "[outbox-park-once] {what} ({id}) parked, on_park called {} times",
                parks.get(id.as_str()).copied().unwrap_or(0)
            ));
        }
    }
    if !unsent.is_empty() {
        let why = if refused.is_empty() {
            "[outbox-no-loss]".to_owned()
        } else {
            format!("[outbox-refused-never-blocks] behind refused {refused:?}:")
        };
        v.push(format!(
            "{why} {} committed messages never sent: {unsent:?}",
            unsent.len()
        ));
    }
    for (id, n) in &parks {
        if rows.get(id).is_none_or(|r| r.state != 2) {
            v.push(format!(
                "[outbox-park-once] on_park called {n} times for {id}, which is not parked"
            ));
        }
    }
    // No phantom.
    for id in &rolled_back {
        if rows.contains_key(id.as_str()) || stored_ids.contains(id.as_str()) {
            v.push(format!("[outbox-no-phantom] {id} of a rolled-back transaction is in the table or the broker"));
        }
    }
    for r in &out.rows {
        if !committed.contains_key(&r.id) && !rolled_back.contains(&r.id) {
            v.push(format!(
                "[outbox-no-phantom] row {} ({}) holds an id no enqueue returned",
                r.seq, r.id
            ));
        }
    }
    // One effect per fact.
    let mut per_fact: BTreeMap<(usize, &str, &str), HashSet<&str>> = BTreeMap::new();
    for m in &out.broker.stored {
        let Some(f) = committed.get(&m.id) else {
            if !rolled_back.contains(&m.id) {
                v.push(format!(
                    "[outbox-no-phantom] the broker stored {} which no enqueue returned",
                    m.id
                ));
            }
            continue;
        };
        if m.payload != f.payload || m.topic != TOPICS[f.topic] || m.business_id != f.business_id {
            v.push(format!(
                "[outbox-one-effect] {} stored with another content than enqueued",
                m.id
            ));
        }
        per_fact
            .entry((f.ns, &m.topic, &m.business_id))
            .or_default()
            .insert(&m.id);
    }
    for (k, ids) in per_fact.iter().filter(|x| x.1.len() > 1) {
        v.push(format!(
            "[outbox-one-effect] {k:?} stored under {} message ids: {ids:?}",
            ids.len()
        ));
    }
    check_effects(&committed, out, &mut v);
    check_order(&committed, out, &mut v);
    check_stranded(s, out, &mut v);
    if v.is_empty() {
        Ok(())
    } else {
        Err(v.join("\n"))
    }
}

/// Through the consume log, each fact the relay sent has one effect, and no
/// fact more than one (a parked one may have one: a confirmation lost
/// before its refusals).
fn check_effects(committed: &BTreeMap<String, Fact>, out: &RunOut, v: &mut Vec<String>) {
    let c = &out.consumption;
    for (id, said) in c.got.iter().filter(|g| g.1.starts_with("error")) {
        v.push(format!("[outbox-one-effect] the consumer of {id}: {said}"));
    }
    let state: HashMap<&str, i64> = out.rows.iter().map(|r| (r.id.as_str(), r.state)).collect();
    let mut known = HashSet::new();
    for (id, f) in committed {
        let key = fact_key(f.ns, TOPICS[f.topic], &f.business_id);
        let n = c.effects.get(&key).copied().unwrap_or(0);
        let sent = state.get(id.as_str()) == Some(&1);
        if n > 1 || (sent && n != 1) {
            v.push(format!(
                "[outbox-one-effect] {} ({id}, {}): {n} effects",
                fact_name(f),
                if sent { "sent" } else { "not sent" }
            ));
        }
        known.insert(key);
    }
    for (k, n) in c.effects.iter().filter(|e| !known.contains(e.0)) {
        v.push(format!(
            "[outbox-no-phantom] {n} effects of {k}, which no committed enqueue holds"
        ));
    }
}

fn fact_name(f: &Fact) -> String {
    format!("{}{}/{}", ns_prefix(f.ns), TOPICS[f.topic], f.business_id)
}

pub(crate) fn ns_prefix(ns: usize) -> String {
    if NAMESPACES[ns].is_empty() {
        String::new()
    } else {
        format!("{}:", NAMESPACES[ns])
    }
}

/// Per ordered business id: seq order is commit order, and the broker's
/// first stores follow it (parked messages no longer hold the others back).
fn check_order(committed: &BTreeMap<String, Fact>, out: &RunOut, v: &mut Vec<String>) {
    let seq: HashMap<&str, i64> = out.rows.iter().map(|r| (r.id.as_str(), r.seq)).collect();
    let parked: HashSet<&str> = out
        .rows
        .iter()
        .filter(|r| r.state == 2)
        .map(|r| r.id.as_str())
        .collect();
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (i, m) in out.broker.stored.iter().enumerate() {
        first.entry(m.id.as_str()).or_insert(i);
    }
    // Per (namespace, business id): (id, commit number, seq).
    type Step<'a> = (&'a str, usize, i64);
    let mut groups: BTreeMap<(usize, &str), Vec<Step<'_>>> = BTreeMap::new();
    for (id, f) in committed.iter().filter(|f| f.1.ordered) {
        if let Some(&q) = seq.get(id.as_str()) {
            groups
                .entry((f.ns, &f.business_id))
                .or_default()
                .push((id, f.commit_no, q));
        }
    }
    for ((ns, biz), mut g) in groups {
        g.sort_by_key(|x| (x.1, x.2));
        let name = format!("{}{biz}", ns_prefix(ns));
        for w in g.windows(2) {
            if w[0].2 > w[1].2 {
                v.push(format!(
                    "[outbox-order] {name}: {} (seq {}) committed before {} (seq {}): seq order is not commit order",
                    w[0].0, w[0].2, w[1].0, w[1].2
                ));
            }
        }
        // The broker's first stores, against commit order and against
        // enqueue (seq) order.
        let mut by_store: Vec<&Step<'_>> = g
            .iter()
            .filter(|x| !parked.contains(x.0) && first.contains_key(x.0))
            .collect();
        for order in ["commit", "enqueue (seq)"] {
            if order != "commit" {
                by_store.sort_by_key(|x| x.2);
            }
            for w in by_store.windows(2) {
                if first[w[0].0] > first[w[1].0] {
                    v.push(format!(
                        "[outbox-order] {name}: the broker stored {} (seq {}, commit #{}) before {} (seq {}, commit #{}): not {order} order",
                        w[1].0, w[1].2, w[1].1, w[0].0, w[0].2, w[0].1
                    ));
                }
            }
        }
    }
}

/// Every message a dead relay held is offered to the broker again within a
/// lease, plus slack, plus the down windows after the crash (twice: the
/// relay backs off after them), plus how late the machine ran timers.
fn check_stranded(s: &ObxSchedule, out: &RunOut, v: &mut Vec<String>) {
    let lease = Duration::from_millis(s.knobs.lease_ms);
    for c in &out.crashes {
        let downs: Duration = s
            .broker
            .downs
            .iter()
            .map(|d| {
                (
                    Duration::from_millis(d.from_ms),
                    Duration::from_millis(d.to_ms),
                )
            })
            .filter(|d| d.1 > c.at)
            .map(|d| d.1 - d.0.max(c.at))
            .sum();
        let rough = c.at + lease + SLACK + 2 * downs;
        let due = rough + lag_between(&out.lag, c.at, rough);
        for id in &c.held {
            let again = out
                .broker
                .calls
                .iter()
                .find(|k| k.at > c.at && k.ids.contains(id))
                .map(|k| k.at);
            match again {
                Some(t) if t <= due => {}
                Some(t) => v.push(format!(
                    "[outbox-stranded] {id}, held by relay {:?} which died at {:?}, offered again only at {t:?} (due by {due:?})",
                    c.relay, c.at
                )),
                None => v.push(format!(
                    "[outbox-stranded] {id}, held by relay {:?} which died at {:?}, never offered again (due by {due:?})",
                    c.relay, c.at
                )),
            }
        }
    }
}
