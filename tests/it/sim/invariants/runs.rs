//! Checks on the body runs of each key: fences, double runs, the fenced register.

use std::collections::HashMap;
use std::time::Duration;

use super::Ctx;
use crate::sim::history::{BodyOut, CallResult, Ev};

pub(super) fn check(cx: &Ctx<'_>, v: &mut Vec<String>) {
    let (s, out, slack, calls) = (cx.s, cx.out, cx.slack, &cx.calls);
    let releases = |c: usize, o: BodyOut| cx.releases(c, o);
    // [fence-monotonic] body runs per key, and [no-double-run] in lease-safe runs.
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
        if !(cx.timing && s.lease_safe()) {
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
}
