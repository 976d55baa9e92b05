//! The invariants checked after every run, from the recorded history and the
//! store log. Each returns a sentence naming the call, owner or key at fault.
//!
//! | name | statement |
//! |---|---|
//! | `store-contract` | (atomic logs) every store answer is what the contract allows in the state the earlier operations left: claims over a live holder are `Busy`/`Done`, a retried claim by the same owner gets its own fence back, `complete`/`renew` apply only for the live owner, `release` only for the owner |
//! | `fence-monotonic` | fences of new claims strictly increase per key, across expiry, `forget` and lost keys; body runs of a key see strictly increasing fences |
//! | `release-after-start` | the guard never sends `release` for a claim whose body started, unless the body failed |
//! | `max-hold` | no renewal extends a lease past claim + `max_hold` (+ operation slack) |
//! | `renewal` | (lease-safe runs: only blips and delayed replies) a live, renewing body never loses its lease before `max_hold` |
//! | `no-double-run` | (lease-safe runs) a key's body runs again only after the earlier run failed, was cancelled, outlived `max_hold`, or its record expired |
//! | `fenced-register` | a fenced write is accepted iff its fence is >= every accepted one: a run that lost its lease cannot overwrite its successor |
//! | `values` | executed values are the body's own; replayed/waited values equal the value stored by the run that completed, which ran with the same payload; backstop values are the business row |
//! | `backstop-one-row` | with a backstop, every value any call returned for a key is the one business row's |
//! | `fail-closed` | `StoreUnavailable`, `InProgress` and `PayloadMismatch` never ran the body |
//! | `bounded` | no call outlives `wait` + 2 × `op_timeout` + its body (cancelled calls end at their cancel time) |
//! | `no-pseudo-owner` | the degraded path never sends store operations |
//! | `progress` | once faults heal and leases lapse, every process completes a call on every key |
//! | `complete-after-body` | the guard completes a claim only after its body finished with a storable result |
//! | `body-result` | the caller gets what its own body returned, whatever happens to the store afterwards |
//! | `wait-liveness` | (calm runs) a waiter does not give up while a result it could read was stored early in its wait |
//!
//! `store.rs` checks the store log, `runs.rs` the body runs per key, `calls.rs`
//! what each call returned.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Duration;

use idem::store::{Claim, Owner};

use super::history::{BodyOut, CallResult, Ev, StoreOp};
use super::run::RunOutput;
use super::schedule::Schedule;

mod calls;
mod runs;
mod store;

#[derive(Debug, Default, Clone)]
pub(super) struct CallInfo {
    pub(super) start: Duration,
    pub(super) body_start: Option<(Duration, u64)>,
    pub(super) body_end: Option<(Duration, BodyOut)>,
    pub(super) end: Option<(Duration, CallResult, Duration)>,
    pub(super) crashed: Option<Duration>,
}

impl CallInfo {
    /// The call was over (returned or dropped) at `t`.
    pub(super) fn over_by(&self, t: Duration) -> bool {
        self.end.as_ref().is_some_and(|e| e.0 <= t) || self.crashed.is_some_and(|c| c <= t)
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    /// The store log is in apply order (the memory store under a single-threaded
    /// runtime): enables the store-contract model checks.
    pub(crate) atomic: bool,
    /// Allowance on time comparisons: 1 ms in virtual time; real stores in real
    /// time get scheduling jitter.
    pub(crate) slack: Duration,
    /// Extra allowance on the `bounded` check only: how late the runtime's own
    /// timers fired on a starved real-time run (a call's duration is the
    /// library's bound plus the scheduler's lateness; safety checks keep `slack`).
    pub(crate) late: Duration,
    /// Time is exact (virtual): enables the liveness checks of calm runs
    /// (`renewal`, `no-double-run`, `wait-liveness`), which a loaded real store
    /// could fail by being slow rather than wrong.
    pub(crate) timing: bool,
}

impl Reading {
    pub(crate) const VIRTUAL: Reading = Reading {
        atomic: true,
        slack: Duration::from_millis(1),
        late: Duration::ZERO,
        timing: true,
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

/// What every check reads: the run, and the maps between calls, owners and fences.
pub(super) struct Ctx<'a> {
    pub(super) s: &'a Schedule,
    pub(super) out: &'a RunOutput,
    pub(super) atomic: bool,
    pub(super) slack: Duration,
    pub(super) late: Duration,
    pub(super) timing: bool,
    pub(super) calls: Vec<CallInfo>,
    pub(super) key_index: HashMap<&'a str, usize>,
    /// The key and fence each owner last claimed (the fence its body ran with).
    /// Fences are keyed by key throughout: the contract only orders one key's
    /// fences (DESIGN §3.9), and two keys may get the same one (MySQL's and
    /// SQLite's fence slots both hand out the database clock's microsecond).
    pub(super) owner_fence: HashMap<Owner, KeyFence>,
    /// When each owner last claimed.
    pub(super) owner_claim_t: HashMap<Owner, Duration>,
    /// The call whose body ran with each fence of each key.
    pub(super) fence_call: HashMap<KeyFence, usize>,
}

/// A key's index and one of its fences.
pub(super) type KeyFence = (usize, u64);

impl Ctx<'_> {
    pub(super) fn call_of_owner(&self, o: &Owner) -> Option<usize> {
        self.owner_fence
            .get(o)
            .and_then(|f| self.fence_call.get(f))
            .copied()
    }

    /// A body outcome that releases the claim (rather than storing a result).
    pub(super) fn releases(&self, call: usize, o: BodyOut) -> bool {
        match o {
            BodyOut::Fail | BodyOut::Unique => true,
            BodyOut::Rejected => !self.s.keys[self.out.calls[call].key].terminal,
            BodyOut::Ok => false,
        }
    }
}

fn check_into(s: &Schedule, out: &RunOutput, r: Reading, v: &mut Vec<String>) {
    let Reading { atomic, slack, .. } = r;
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

    // Owners, fences and calls.
    let mut owner_fence: HashMap<Owner, KeyFence> = HashMap::new();
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
            if let Some(&k) = key_index.get(e.key.as_str()) {
                owner_fence.insert(*owner, (k, fence.get()));
            }
            owner_claim_t.insert(*owner, e.t);
        }
    }
    let mut fence_call: HashMap<KeyFence, usize> = HashMap::new();
    for (i, c) in calls.iter().enumerate() {
        if let Some((_, f)) = c.body_start
            && f > 0
        {
            fence_call.insert((out.calls[i].key, f), i);
        }
    }
    let cx = Ctx {
        s,
        out,
        atomic,
        slack,
        late: r.late,
        timing: r.timing,
        calls,
        key_index,
        owner_fence,
        owner_claim_t,
        fence_call,
    };
    store::check(&cx, v);
    runs::check(&cx, v);
    calls::check(&cx, v);
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
