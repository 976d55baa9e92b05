//! The invariants checked after every run, from the recorded history and the
//! store log. Each returns a sentence naming the call, owner or key at fault.
//!
//! | name | statement |
//! |---|---|
//! | `store-contract` | (atomic logs) every store answer is what the contract allows in the state the earlier operations left: claims over a live holder are `Busy`/`Done`, a retried claim by the same owner gets its own fence back, `complete`/`renew` apply only for the live owner, `release` only for the owner |
//! | `fence-monotonic` | fences of new claims strictly increase per key, across expiry, `forget` and lost keys; body runs of a key see strictly increasing fences |
//! | `release-after-start` | the guard never sends `release` for a claim whose body started, unless the body failed |
//! | `max-hold` | no renewal extends a lease past claim + `max_hold` (+ operation slack) |
//! | `renewal` | (fault-free runs) a live, renewing body never loses its lease before `max_hold` |
//! | `no-double-run` | (fault-free runs) a key's body runs again only after the earlier run failed, was cancelled, outlived `max_hold`, or its record expired |
//! | `fenced-register` | a fenced write is accepted iff its fence is >= every accepted one: a run that lost its lease cannot overwrite its successor |
//! | `values` | executed values are the body's own; replayed/waited values equal the value stored by the run that completed, which ran with the same payload; backstop values are the business row |
//! | `backstop-one-row` | with a backstop, every value any call returned for a key is the one business row's |
//! | `fail-closed` | `StoreUnavailable`, `InProgress` and `PayloadMismatch` never ran the body |
//! | `bounded` | no call outlives `wait` + 2 × `op_timeout` + its body (cancelled calls end at their cancel time) |
//! | `no-pseudo-owner` | the degraded path never sends store operations |
//! | `progress` | once faults heal and leases lapse, every process completes a call on every key |

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Duration;

use idem::How;
use idem::store::{Claim, Owned, Owner};

use super::history::{BodyOut, CallResult, ErrKind, Ev, StoreOp};
use super::run::{RunOutput, value_of};
use super::schedule::Schedule;

#[derive(Debug, Default, Clone)]
struct CallInfo {
    start: Duration,
    body_start: Option<(Duration, u64)>,
    body_end: Option<(Duration, BodyOut)>,
    end: Option<(Duration, CallResult, Duration)>,
    crashed: Option<Duration>,
}

impl CallInfo {
    /// The call was over (returned or dropped) at `t`.
    fn over_by(&self, t: Duration) -> bool {
        self.end.as_ref().is_some_and(|e| e.0 <= t) || self.crashed.is_some_and(|c| c <= t)
    }
}

#[derive(Debug, Clone)]
struct Ent {
    pending: bool,
    owner: Owner,
    fence: u64,
    expires: Duration,
}

/// How a run's log may be read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    /// The store log is in apply order (the memory store under a single-threaded
    /// runtime): enables the store-contract model checks.
    pub(crate) atomic: bool,
    /// Allowance on time comparisons: 1 ms in virtual time; real stores in real
    /// time get scheduling jitter.
    pub(crate) slack: Duration,
}

impl Reading {
    pub(crate) const VIRTUAL: Reading = Reading {
        atomic: true,
        slack: Duration::from_millis(1),
    };
}

/// Checks every invariant.
pub(crate) fn check(s: &Schedule, out: &RunOutput, r: Reading) -> Result<(), String> {
    let mut v = Vec::new();
    check_into(s, out, r, &mut v);
    if v.is_empty() {
        Ok(())
    } else {
        v.truncate(6);
        Err(v.join("\n"))
    }
}

fn check_into(s: &Schedule, out: &RunOutput, r: Reading, v: &mut Vec<String>) {
    let Reading { atomic, slack } = r;
    if let Some(st) = &out.stuck {
        v.push(format!("[bounded] {st}"));
    }
    let mut calls: Vec<CallInfo> = vec![CallInfo::default(); out.calls.len()];
    for (t, e) in &out.events {
        match e {
            Ev::CallStart { call } => calls[*call].start = *t,
            Ev::BodyStart { call, fence } => calls[*call].body_start = Some((*t, *fence)),
            Ev::BodyEnd { call, out: o } => calls[*call].body_end = Some((*t, *o)),
            Ev::CallEnd {
                call,
                result,
                elapsed,
            } => calls[*call].end = Some((*t, result.clone(), *elapsed)),
            Ev::Crashed { call } => calls[*call].crashed = Some(*t),
            _ => {}
        }
    }
    let key_index: HashMap<&str, usize> = out
        .keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    let t_op = s.op_timeout;

    // Owners, fences and calls.
    let mut owner_fence: HashMap<Owner, u64> = HashMap::new();
    let mut owner_claim_t: HashMap<Owner, Duration> = HashMap::new();
    for e in &out.store_log {
        if let StoreOp::Claim {
            owner,
            res: Ok(Claim::Claimed { fence }),
            ..
        } = &e.op
        {
            // An owner may claim again after a lost reply; if its key was lost in
            // between, the retry gets a new fence: the last one is the one it ran with.
            owner_fence.insert(*owner, fence.get());
            owner_claim_t.insert(*owner, e.t);
        }
    }
    let mut fence_call: HashMap<u64, usize> = HashMap::new();
    for (i, c) in calls.iter().enumerate() {
        if let Some((_, f)) = c.body_start
            && f > 0
        {
            fence_call.insert(f, i);
        }
    }
    let call_of_owner = |o: &Owner| owner_fence.get(o).and_then(|f| fence_call.get(f)).copied();

    // [no-pseudo-owner]
    for e in &out.store_log {
        if e.op.owner() == Some(Owner(0)) {
            v.push(format!(
                "[no-pseudo-owner] the degraded pseudo-owner sent {:?} on {} at {:?}",
                e.op, e.key, e.t
            ));
        }
    }

    // A body outcome that releases the claim (rather than storing a result).
    let releases = |call: usize, o: BodyOut| match o {
        BodyOut::Fail | BodyOut::Unique => true,
        BodyOut::Rejected => !s.keys[out.calls[call].key].terminal,
        BodyOut::Ok => false,
    };

    // [release-after-start], [complete-after-body]
    for e in &out.store_log {
        if let StoreOp::Complete { owner, .. } = &e.op
            && let Some(c) = call_of_owner(owner)
        {
            let ok = matches!(calls[c].body_end, Some((te, o)) if te <= e.t && (!releases(c, o) || o == BodyOut::Unique));
            if !ok {
                v.push(format!(
                    "[complete-after-body] call {c} (owner {owner:?}) completed at {:?} with its body {:?}",
                    e.t, calls[c].body_end
                ));
            }
        }
        if let StoreOp::Release { owner, .. } = &e.op
            && let Some(c) = call_of_owner(owner)
        {
            let ok = matches!(calls[c].body_end, Some((te, o)) if te <= e.t && releases(c, o));
            if !ok {
                v.push(format!(
                    "[release-after-start] call {c} (owner {owner:?}) released its claim at {:?} \
                     although its body started at {:?} and ended {:?}",
                    e.t, calls[c].body_start, calls[c].body_end
                ));
            }
        }
    }

    // [max-hold]
    for e in &out.store_log {
        if let StoreOp::Renew {
            owner,
            lease,
            res: Ok(Owned::Applied),
        } = &e.op
        {
            let Some(&k) = key_index.get(e.key.as_str()) else {
                continue;
            };
            let Some(&ct) = owner_claim_t.get(owner) else {
                continue;
            };
            let limit = ct + s.keys[k].max_hold() + 2 * t_op + slack;
            if e.t + *lease > limit {
                v.push(format!(
                    "[max-hold] owner {owner:?} renewed key {k} at {:?} to {:?}, past claim {ct:?} + max_hold {:?}",
                    e.t,
                    e.t + *lease,
                    s.keys[k].max_hold()
                ));
            }
        }
    }

    // [store-contract], [fence-monotonic] (log order), [renewal]
    if atomic {
        let mut state: HashMap<&str, Option<Ent>> = HashMap::new();
        let mut max_fence: HashMap<&str, u64> = HashMap::new();
        for e in &out.store_log {
            let k = e.key.as_str();
            let t = e.t;
            let st = state.entry(k).or_insert(None);
            let live = st.clone().filter(|x| x.expires > t);
            match &e.op {
                StoreOp::Claim {
                    owner, lease, res, ..
                } => {
                    let Ok(res) = res else { continue };
                    match (&live, res) {
                        (Some(x), Claim::Done(rec)) if !x.pending && rec.fence.get() == x.fence => {}
                        (Some(x), Claim::Claimed { fence }) if x.pending && x.owner == *owner => {
                            if fence.get() != x.fence {
                                v.push(format!(
                                    "[store-contract] owner {owner:?} re-claimed key {k} and got fence {fence:?}, not its own {}",
                                    x.fence
                                ));
                            }
                        }
                        (Some(x), Claim::Busy { .. }) if x.pending && x.owner != *owner => {}
                        (None, Claim::Claimed { fence }) => {
                            let m = max_fence.entry(k).or_insert(0);
                            if fence.get() <= *m {
                                v.push(format!(
                                    "[fence-monotonic] key {k}: new claim at {t:?} got fence {fence:?} <= earlier {m}"
                                ));
                            }
                            *m = (*m).max(fence.get());
                            if s.calm() {
                                renewal_check(s, slack, &key_index, k, t, st.as_ref(), &calls, &call_of_owner, &owner_claim_t, v);
                            }
                            *st = Some(Ent {
                                pending: true,
                                owner: *owner,
                                fence: fence.get(),
                                expires: t + *lease,
                            });
                        }
                        (l, r) => v.push(format!(
                            "[store-contract] claim by {owner:?} on {k} at {t:?} answered {r:?} in state {l:?}"
                        )),
                    }
                }
                StoreOp::Complete {
                    owner, ttl, res, ..
                } => {
                    let Ok(res) = res else { continue };
                    let expect = match &live {
                        Some(x) if x.owner == *owner => Owned::Applied,
                        _ => Owned::NotOwner,
                    };
                    if *res != expect {
                        v.push(format!(
                            "[store-contract] complete by {owner:?} on {k} at {t:?} answered {res:?} in state {live:?}"
                        ));
                    }
                    if let Some(x) = st
                        .as_mut()
                        .filter(|x| x.pending && x.expires > t && x.owner == *owner)
                    {
                        x.pending = false;
                        x.expires = t + *ttl;
                    }
                }
                StoreOp::Release { owner, res } => {
                    let Ok(res) = res else { continue };
                    // An expired record of another owner is logically absent (and
                    // `purge_expired` may have dropped it): either answer is safe.
                    let expect = match &*st {
                        None => Some(Owned::Applied),
                        Some(x) if x.pending && x.owner == *owner => Some(Owned::Applied),
                        Some(x) if x.expires <= t => None,
                        Some(_) => Some(Owned::NotOwner),
                    };
                    if expect.is_some_and(|e| e != *res) {
                        v.push(format!(
                            "[store-contract] release by {owner:?} on {k} at {t:?} answered {res:?} in state {st:?}"
                        ));
                    }
                    if *res == Owned::Applied {
                        *st = None;
                    }
                }
                StoreOp::Renew { owner, lease, res } => {
                    let Ok(res) = res else { continue };
                    let expect = match &live {
                        Some(x) if x.pending && x.owner == *owner => Owned::Applied,
                        _ => Owned::NotOwner,
                    };
                    if *res != expect {
                        v.push(format!(
                            "[store-contract] renew by {owner:?} on {k} at {t:?} answered {res:?} in state {live:?}"
                        ));
                    }
                    if expect == Owned::Applied
                        && let Some(x) = st.as_mut()
                    {
                        x.expires = t + *lease;
                    }
                }
                StoreOp::Forget { res } => {
                    if res.is_ok() {
                        *st = None;
                    }
                }
            }
        }
    }

    // [fence-monotonic] body runs per key, and [no-double-run] in calm runs.
    for k in 0..out.keys.len() {
        let mut runs: Vec<(Duration, u64, usize)> = calls
            .iter()
            .enumerate()
            .filter(|(i, _)| out.calls[*i].key == k)
            .filter_map(|(i, c)| c.body_start.filter(|b| b.1 > 0).map(|b| (b.0, b.1, i)))
            .collect();
        runs.sort();
        // Body starts need not follow fence order: a claim's reply can arrive after
        // the key was lost and claimed again (seed 3909). Fences must be distinct,
        // and the fenced register then orders their writes.
        let mut fences: Vec<u64> = runs.iter().map(|r| r.1).collect();
        fences.sort();
        if fences.windows(2).any(|w| w[0] == w[1]) {
            v.push(format!(
                "[fence-monotonic] key {k}: two body runs shared a fence: {runs:?}"
            ));
        }
        if s.fault_free() {
            for w in runs.windows(2) {
                if w[1].1 <= w[0].1 {
                    v.push(format!(
                        "[fence-monotonic] key {k}: call {} ran with fence {} after call {} with fence {}",
                        w[1].2, w[1].1, w[0].2, w[0].1
                    ));
                }
            }
        }
        if !s.calm() {
            continue;
        }
        let spec = &s.keys[k];
        for (j, r2) in runs.iter().enumerate() {
            for r1 in &runs[..j] {
                let c1 = &calls[r1.2];
                let start2 = r2.0;
                let failed =
                    matches!(c1.body_end, Some((te, o)) if te <= start2 && releases(r1.2, o));
                let dropped =
                    matches!(&c1.end, Some((te, CallResult::Cancelled, _)) if *te <= start2);
                let held_out =
                    start2 + slack >= r1.0 + spec.max_hold().saturating_sub(spec.policy.lease);
                let expired = matches!(c1.body_end, Some((te, o)) if !releases(r1.2, o) && te + spec.policy.ttl <= start2 + slack);
                if !(failed || dropped || held_out || expired) {
                    v.push(format!(
                        "[no-double-run] key {k}: call {} ran its body at {start2:?} while call {}'s run (started {:?}, ended {:?}, call end {:?}) still held it",
                        r2.2, r1.2, r1.0, c1.body_end, c1.end.as_ref().map(|e| (e.0, e.1.clone()))
                    ));
                }
            }
        }
    }

    // [fenced-register]
    let mut reg: HashMap<usize, u64> = HashMap::new();
    for (_, e) in &out.events {
        if let Ev::FencedWrite {
            call,
            fence,
            accepted,
        } = e
        {
            let k = out.calls[*call].key;
            let cur = reg.entry(k).or_insert(0);
            if *accepted != (*fence >= *cur) {
                v.push(format!(
                    "[fenced-register] key {k}: write by call {call} with fence {fence} accepted={accepted} over {cur}"
                ));
            }
            if *accepted {
                *cur = *fence;
            }
        }
    }

    // [values]
    let mut stored: HashMap<u64, u64> = HashMap::new();
    // Terminal errors stored: fence -> (key, rejected value).
    let mut stored_err: HashMap<u64, (usize, u64)> = HashMap::new();
    for e in &out.store_log {
        if let StoreOp::Complete {
            owner,
            payload,
            res: Ok(Owned::Applied),
            ..
        } = &e.op
        {
            let Some(&f) = owner_fence.get(owner) else {
                v.push(format!(
                    "[values] owner {owner:?} completed {} without a claim",
                    e.key
                ));
                continue;
            };
            let val = payload
                .get(7..)
                .and_then(|j| serde_json::from_slice::<u64>(j).ok());
            let Some(val) = val else {
                v.push(format!("[values] unreadable stored payload {payload:?}"));
                continue;
            };
            if payload.get(6) == Some(&1) {
                let k = key_index.get(e.key.as_str()).copied().unwrap_or(usize::MAX);
                let own = fence_call.get(&f).copied();
                if own.map(value_of) != Some(val)
                    || own.and_then(|c| calls[c].body_end).map(|b| b.1) != Some(BodyOut::Rejected)
                {
                    v.push(format!(
                        "[values] fence {f} stored rejection {val}, not its own body's ({own:?})"
                    ));
                }
                stored_err.insert(f, (k, val));
                continue;
            }
            if let Some(prev) = stored.insert(f, val)
                && prev != val
            {
                v.push(format!("[values] fence {f} stored {prev} then {val}"));
            }
            let k = key_index.get(e.key.as_str()).copied();
            let own = fence_call.get(&f).map(|c| value_of(*c));
            let row = k.and_then(|k| out.rows.get(&k).copied());
            if Some(val) != own && Some(val) != row {
                v.push(format!(
                    "[values] fence {f} stored {val}: neither its body's value {own:?} nor the row {row:?}"
                ));
            }
        }
    }
    for (i, c) in calls.iter().enumerate() {
        let spec = &out.calls[i];
        let ks = &s.keys[spec.key];
        let Some((_, res, elapsed)) = &c.end else {
            continue;
        };
        match res {
            CallResult::Ok { how, value, fence } => {
                match how {
                    How::Executed => {
                        if c.body_start.map(|b| b.1) != Some(*fence)
                            || !matches!(c.body_end, Some((_, BodyOut::Ok)))
                            || *value != value_of(i)
                        {
                            v.push(format!(
                                "[values] call {i} executed with fence {fence} value {value} but its body was {:?}/{:?}",
                                c.body_start, c.body_end
                            ));
                        }
                    }
                    How::Replayed | How::Waited => {
                        if c.body_start.is_some() {
                            v.push(format!(
                                "[values] call {i} ran its body but reported {how:?}"
                            ));
                        }
                        // A real store may apply a `complete` whose caller was dropped
                        // before the reply (and the log line) came back: then the
                        // value must still be that run's own, or the row.
                        let unlogged = !atomic
                            && !stored.contains_key(fence)
                            && (fence_call.get(fence).map(|c| value_of(*c)) == Some(*value)
                                || out.rows.get(&spec.key) == Some(value));
                        if stored.get(fence) != Some(value) && !unlogged {
                            v.push(format!(
                                "[values] call {i} replayed {value} (fence {fence}) but that run stored {:?}",
                                stored.get(fence)
                            ));
                        }
                        if let Some(&src) = fence_call.get(fence)
                            && out.calls[src].payload != spec.payload
                        {
                            v.push(format!(
                                "[values] call {i} (payload {}) replayed call {src}'s result (payload {})",
                                spec.payload, out.calls[src].payload
                            ));
                        }
                    }
                    How::Backstop => {
                        if !ks.backstop()
                            || !ks.on_conflict
                            || out.rows.get(&spec.key) != Some(value)
                        {
                            v.push(format!(
                                "[values] call {i} got {value} through the backstop; row is {:?}",
                                out.rows.get(&spec.key)
                            ));
                        }
                    }
                    How::Degraded => {
                        if *fence != 0 || !ks.policy.degrade || *value != value_of(i) {
                            v.push(format!(
                                "[values] call {i} degraded with fence {fence} value {value}"
                            ));
                        }
                    }
                    other => v.push(format!("[values] call {i}: unexpected outcome {other:?}")),
                }
                // [backstop-one-row]
                if ks.backstop() && out.rows.get(&spec.key) != Some(value) {
                    v.push(format!(
                        "[backstop-one-row] call {i} returned {value} ({how:?}) but the row of key {} is {:?}",
                        spec.key,
                        out.rows.get(&spec.key)
                    ));
                }
            }
            CallResult::Err(kind) => {
                // [fail-closed]
                let no_body = matches!(
                    kind,
                    ErrKind::StoreUnavailable | ErrKind::InProgress | ErrKind::Mismatch
                );
                if no_body && c.body_start.is_some() {
                    v.push(format!(
                        "[fail-closed] call {i} ran its body and then failed with {kind:?}"
                    ));
                }
                if let ErrKind::Rejected(val) = kind {
                    let own =
                        matches!(c.body_end, Some((_, BodyOut::Rejected))) && *val == value_of(i);
                    let replayed = c.body_start.is_none()
                        && ks.terminal
                        && stored_err.iter().any(|(f, (k, sv))| {
                            *k == spec.key
                                && sv == val
                                && fence_call
                                    .get(f)
                                    .is_some_and(|src| out.calls[*src].payload == spec.payload)
                        });
                    if !(own || replayed) {
                        v.push(format!(
                            "[values] call {i} failed with rejection {val}: neither its own body's nor a stored one of its key and payload"
                        ));
                    }
                }
                if matches!(kind, ErrKind::Other(_)) {
                    v.push(format!("[values] call {i}: unexpected error {kind:?}"));
                }
            }
            CallResult::Cancelled => {}
        }
        // [body-result]: the caller gets what its body returned, whatever happens
        // to the store afterwards (semantics 7: a failed `complete` still returns Ok).
        if let Some((_, o)) = c.body_end
            && !matches!(res, CallResult::Cancelled)
        {
            let fine = match (o, res) {
                (BodyOut::Ok, CallResult::Ok { how, value, .. }) => {
                    matches!(how, How::Executed | How::Degraded) && *value == value_of(i)
                }
                (BodyOut::Fail, CallResult::Err(ErrKind::Transient)) => true,
                (BodyOut::Rejected, CallResult::Err(ErrKind::Rejected(val))) => *val == value_of(i),
                (
                    BodyOut::Unique,
                    CallResult::Ok {
                        how: How::Backstop, ..
                    },
                ) => ks.on_conflict,
                (BodyOut::Unique, CallResult::Err(ErrKind::Duplicate)) => !ks.on_conflict,
                (BodyOut::Unique, CallResult::Err(ErrKind::NoRow)) => ks.on_conflict,
                _ => false,
            };
            if !fine {
                v.push(format!(
                    "[body-result] call {i}'s body ended {o:?} but the call returned {res:?}"
                ));
            }
        }
        // [wait-liveness] (calm runs): a waiter does not give up while a result it
        // could have read was stored early enough in its wait (semantics 3).
        if s.calm() && matches!(res, CallResult::Err(ErrKind::InProgress)) {
            let w_end = c.start + *elapsed;
            for e in &out.store_log {
                if let StoreOp::Complete {
                    res: Ok(Owned::Applied),
                    ..
                } = &e.op
                    && key_index.get(e.key.as_str()) == Some(&spec.key)
                    && e.t >= c.start
                    && e.t + Duration::from_millis(60) + slack < c.start + ks.wait_budget()
                    && e.t + ks.policy.ttl > w_end
                {
                    v.push(format!(
                        "[wait-liveness] call {i} gave up at {w_end:?} although a result was stored at {:?}, within its wait",
                        e.t
                    ));
                }
            }
        }
        // An `InProgress` caller waited its whole budget first.
        if matches!(res, CallResult::Err(ErrKind::InProgress))
            && *elapsed + slack < ks.wait_budget()
        {
            v.push(format!(
                "[bounded] call {i} gave up with InProgress after {elapsed:?} of its {:?} wait",
                ks.wait_budget()
            ));
        }
        // [bounded]
        let limit = match (res, spec.cancel_after) {
            (CallResult::Cancelled, Some(d)) => d,
            _ => {
                let body = match (c.body_start, c.body_end) {
                    (Some(a), Some(b)) => b.0 - a.0,
                    _ => Duration::ZERO,
                };
                ks.wait_budget() + 2 * t_op + body
            }
        };
        if *elapsed > limit + slack.max(Duration::from_millis(10)) {
            v.push(format!(
                "[bounded] call {i} took {elapsed:?} (limit {limit:?}, result {res:?})"
            ));
        }
    }

    // [progress]
    for (i, c) in calls.iter().enumerate().skip(out.first_probe) {
        // Without `on_conflict`, a key whose row exists answers `Duplicate` for ever.
        let ks = &s.keys[out.calls[i].key];
        let ok = match &c.end {
            Some((_, CallResult::Ok { .. } | CallResult::Err(ErrKind::Mismatch), _)) => true,
            Some((_, CallResult::Err(ErrKind::Duplicate), _)) => ks.backstop() && !ks.on_conflict,
            Some((_, CallResult::Err(ErrKind::Rejected(_)), _)) => ks.terminal,
            _ => false,
        };
        if !ok && out.stuck.is_none() {
            v.push(format!(
                "[progress] probe call {i} (process {}, key {}) after healing ended {:?}",
                out.calls[i].proc,
                out.calls[i].key,
                c.end.as_ref().map(|e| e.1.clone())
            ));
        }
    }
    for (i, c) in calls.iter().enumerate().take(out.first_probe) {
        if c.end.is_none() && c.crashed.is_none() && out.stuck.is_none() {
            v.push(format!("[bounded] call {i} never ended"));
        }
    }
}

/// A new claim at `t` replaced `prev` (expired): in a fault-free run, that holder
/// must have stopped renewing (dropped, finished, or out of `max_hold`).
#[allow(clippy::too_many_arguments)]
fn renewal_check(
    s: &Schedule,
    slack: Duration,
    key_index: &HashMap<&str, usize>,
    k: &str,
    t: Duration,
    prev: Option<&Ent>,
    calls: &[CallInfo],
    call_of_owner: &dyn Fn(&Owner) -> Option<usize>,
    owner_claim_t: &HashMap<Owner, Duration>,
    v: &mut Vec<String>,
) {
    let Some(prev) = prev.filter(|p| p.pending) else {
        return;
    };
    let Some(c) = call_of_owner(&prev.owner) else {
        return;
    };
    let Some(&ki) = key_index.get(k) else { return };
    let spec = &s.keys[ki];
    let Some(&ct) = owner_claim_t.get(&prev.owner) else {
        return;
    };
    if calls[c].over_by(t) {
        return;
    }
    if t + slack < ct + spec.max_hold().saturating_sub(spec.policy.lease) {
        v.push(format!(
            "[renewal] call {c}'s lease on key {ki} lapsed at {:?} (claimed {ct:?}, max_hold {:?}) while it was running",
            prev.expires,
            spec.max_hold()
        ));
    }
}

/// A readable dump of a run, printed with a failing seed.
pub(crate) fn dump(s: &Schedule, out: &RunOutput) -> String {
    let mut d = String::new();
    let _ = writeln!(d, "schedule: {s:#?}");
    let _ = writeln!(d, "keys: {:?}", out.keys);
    let _ = writeln!(d, "history:");
    for (t, e) in &out.events {
        let _ = writeln!(d, "  {t:>12?}  {e:?}");
    }
    let _ = writeln!(d, "store log:");
    for e in &out.store_log {
        let op = match &e.op {
            StoreOp::Complete {
                owner, ttl, res, ..
            } => format!("Complete {{ owner: {owner:?}, ttl: {ttl:?}, res: {res:?} }}"),
            StoreOp::Claim {
                owner,
                fingerprint,
                lease,
                res,
            } => {
                format!(
                    "Claim {{ owner: {owner:?}, fp: {:02x}{:02x}, lease: {lease:?}, res: {res:?} }}",
                    fingerprint[0], fingerprint[1]
                )
            }
            other => format!("{other:?}"),
        };
        let _ = writeln!(d, "  {:>12?}  {}  {op}", e.t, e.key);
    }
    let _ = writeln!(d, "rows: {:?}", out.rows);
    d
}
