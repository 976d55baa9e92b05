//! Checks on the store log: who sent what, and (for atomic logs) whether every
//! answer is what the store contract allows.

use std::collections::HashMap;
use std::time::Duration;

use idem::store::{Claim, Owned, Owner};

use super::Ctx;
use crate::sim::history::{BodyOut, StoreOp};

#[derive(Debug, Clone)]
struct Ent {
    pending: bool,
    owner: Owner,
    fence: u64,
    expires: Duration,
}

pub(super) fn check(cx: &Ctx<'_>, v: &mut Vec<String>) {
    let (s, out, atomic, slack, t_op) = (cx.s, cx.out, cx.atomic, cx.slack, cx.s.op_timeout);
    let (calls, key_index, owner_claim_t) = (&cx.calls, &cx.key_index, &cx.owner_claim_t);
    let call_of_owner = |o: &Owner| cx.call_of_owner(o);
    let releases = |c: usize, o: BodyOut| cx.releases(c, o);
    // [no-pseudo-owner]
    for e in &out.store_log {
        if e.op.owner() == Some(Owner(0)) {
            v.push(format!(
                "[no-pseudo-owner] the degraded pseudo-owner sent {:?} on {} at {:?}",
                e.op, e.key, e.t
            ));
        }
    }

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
                            if cx.timing && s.lease_safe() {
                                renewal_check(cx, k, t, st.as_ref(), v);
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
}

/// A new claim at `t` replaced `prev` (expired): in a fault-free run, that holder
/// must have stopped renewing (dropped, finished, or out of `max_hold`).
fn renewal_check(cx: &Ctx<'_>, k: &str, t: Duration, prev: Option<&Ent>, v: &mut Vec<String>) {
    let (s, slack, calls, key_index, owner_claim_t) =
        (cx.s, cx.slack, &cx.calls, &cx.key_index, &cx.owner_claim_t);
    let call_of_owner = |o: &Owner| cx.call_of_owner(o);
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
