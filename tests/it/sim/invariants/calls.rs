//! Checks on what each call returned, and on the calls after healing.

use std::collections::HashMap;
use std::time::Duration;

use idem::How;
use idem::store::Owned;

use super::{Ctx, KeyFence};
use crate::sim::history::{BodyOut, CallResult, ErrKind, StoreOp};
use crate::sim::run::value_of;

pub(super) fn check(cx: &Ctx<'_>, v: &mut Vec<String>) {
    let (s, out, atomic, slack, t_op) = (cx.s, cx.out, cx.atomic, cx.slack, cx.s.op_timeout);
    let (calls, key_index, owner_fence, fence_call) =
        (&cx.calls, &cx.key_index, &cx.owner_fence, &cx.fence_call);
    // [values]
    let mut stored: HashMap<KeyFence, u64> = HashMap::new();
    // Terminal errors stored: (key, fence) -> rejected value.
    let mut stored_err: HashMap<KeyFence, u64> = HashMap::new();
    for e in &out.store_log {
        if let StoreOp::Complete {
            owner,
            payload,
            res: Ok(Owned::Applied),
            ..
        } = &e.op
        {
            let Some(&kf) = owner_fence.get(owner) else {
                // A degraded call settles the claim it sent without an answer with
                // its value, which is the row's (it inserted it or loaded it: issue
                // 19); on a real store that claim's reply, and with it the log line
                // naming its fence, may never have come back.
                let row = key_index
                    .get(e.key.as_str())
                    .and_then(|k| out.rows.get(k).copied());
                let val = payload
                    .get(7..)
                    .and_then(|j| serde_json::from_slice::<u64>(j).ok());
                if !atomic && val.is_some() && val == row {
                    continue;
                }
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
            let f = kf.1;
            if payload.get(6) == Some(&1) {
                let own = fence_call.get(&kf).copied();
                if own.map(value_of) != Some(val)
                    || own.and_then(|c| calls[c].body_end).map(|b| b.1) != Some(BodyOut::Rejected)
                {
                    v.push(format!(
                        "[values] fence {f} stored rejection {val}, not its own body's ({own:?})"
                    ));
                }
                stored_err.insert(kf, val);
                continue;
            }
            if let Some(prev) = stored.insert(kf, val)
                && prev != val
            {
                v.push(format!("[values] fence {f} stored {prev} then {val}"));
            }
            let own = fence_call.get(&kf).map(|c| value_of(*c));
            let row = out.rows.get(&kf.0).copied();
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
                        let kf = (spec.key, *fence);
                        let unlogged = !atomic
                            && !stored.contains_key(&kf)
                            && (fence_call.get(&kf).map(|c| value_of(*c)) == Some(*value)
                                || out.rows.get(&spec.key) == Some(value));
                        if stored.get(&kf) != Some(value) && !unlogged {
                            v.push(format!(
                                "[values] call {i} replayed {value} (fence {fence}) but that run stored {:?}",
                                stored.get(&kf)
                            ));
                        }
                        if let Some(&src) = fence_call.get(&kf)
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
                        && stored_err.iter().any(|(kf, sv)| {
                            kf.0 == spec.key
                                && sv == val
                                && fence_call
                                    .get(kf)
                                    .is_some_and(|src| out.calls[*src].payload == spec.payload)
                        });
                    // As for values: a real store may have applied the `complete`
                    // of a rejection whose caller was gone before the reply.
                    let unlogged = !atomic
                        && c.body_start.is_none()
                        && ks.terminal
                        && calls.iter().enumerate().any(|(j, cj)| {
                            out.calls[j].key == spec.key
                                && out.calls[j].payload == spec.payload
                                && matches!(cj.body_end, Some((_, BodyOut::Rejected)))
                                && value_of(j) == *val
                        });
                    if !(own || replayed || unlogged) {
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
        if cx.timing && s.calm() && matches!(res, CallResult::Err(ErrKind::InProgress)) {
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
        if *elapsed > limit + slack.max(Duration::from_millis(10)) + cx.late {
            v.push(format!(
                "[bounded] call {i} took {elapsed:?} (limit {limit:?}, timer lateness allowance {:?}, result {res:?})",
                cx.late
            ));
        }
    }

    // [progress]: the last probe of each process and key (earlier tries of a real
    // store's probe may have timed out).
    let mut probed = std::collections::HashSet::new();
    for (i, c) in calls.iter().enumerate().skip(out.first_probe).rev() {
        if !probed.insert((out.calls[i].proc, out.calls[i].key)) {
            continue;
        }
        // Without `on_conflict`, a key whose row exists answers `Duplicate` for ever.
        let ks = &s.keys[out.calls[i].key];
        let ok = match &c.end {
            Some((_, CallResult::Ok { .. } | CallResult::Err(ErrKind::Mismatch), _)) => true,
            Some((_, CallResult::Err(ErrKind::Duplicate), _)) => ks.backstop() && !ks.on_conflict,
            Some((_, CallResult::Err(ErrKind::Rejected(_)), _)) => ks.terminal,
            // A real store may be slow under load: a probe that timed out honestly
            // is not a stuck process (a wedged breaker fails at once).
            // (The call's budget: the op timeout, clamped to a third of its lease.)
            Some((_, CallResult::Err(ErrKind::StoreUnavailable), elapsed)) => {
                !cx.timing && *elapsed >= ks.policy.op_budget(s.op_timeout)
            }
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
