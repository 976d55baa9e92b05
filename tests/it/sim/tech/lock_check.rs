//! The lock's invariants (listed in `lock.rs`), its dump and its sweep.

use std::time::Duration;

use super::SeedRun;
use super::lock::{LockEvent, LockInfo, LockOutput, LockSchedule, run};

impl LockSchedule {
    /// Nothing may cost a live holder its lease: no fault plan, no events but
    /// outages shorter than a third of the lease less the retry pauses.
    pub(crate) fn lease_safe(&self) -> bool {
        self.plan.is_none()
            && self.events.iter().all(|(_, e)| {
                matches!(e, LockEvent::Outage(d)
                    if *d + Duration::from_millis(150) < (self.lease / 3).min(self.op_timeout))
            })
    }

    pub(crate) fn keys_kept(&self) -> bool {
        self.plan.is_none_or(|p| p.lost_key == 0.0)
            && !self
                .events
                .iter()
                .any(|(_, e)| matches!(e, LockEvent::LoseKeys | LockEvent::Forget(_)))
    }
}

fn key_of(s: &LockSchedule, out: &LockOutput, i: usize) -> usize {
    if i < s.calls.len() {
        s.calls[i].key
    } else {
        out.probe_keys[i - s.calls.len()]
    }
}

/// When a body stopped running: it ended, or its caller or process went.
fn over(c: &LockInfo) -> Option<Duration> {
    match (c.body_end, c.gone) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

pub(crate) fn check(s: &LockSchedule, out: &LockOutput) -> Result<(), String> {
    let mut v: Vec<String> = out
        .sql_errors
        .iter()
        .map(|e| format!("[lock-fenced-sql] {e}"))
        .collect();
    let max_hold = s.max_hold.unwrap_or(s.lease * 20);
    let slack = Duration::from_millis(1);
    for k in 0..s.keys {
        let mut grants: Vec<(usize, Duration, u64)> = out
            .calls
            .iter()
            .enumerate()
            .filter(|(i, _)| key_of(s, out, *i) == k)
            .filter_map(|(i, c)| c.body.map(|b| (i, b.0, b.1)))
            .collect();
        grants.sort_by_key(|g| (g.1, g.2));
        let mut top = 0u64;
        for (_, f) in out.claims.iter().filter(|c| c.0 == k) {
            if *f <= top {
                v.push(format!(
                    "[lock-fence-monotonic] key {k}: a claim got fence {f} after one got {top}"
                ));
            }
            top = top.max(*f);
        }
        let mut writes: Vec<(Duration, usize, u64, bool, bool)> = grants
            .iter()
            .filter_map(|g| out.calls[g.0].write.map(|w| (w.0, g.0, w.1, w.2, w.3)))
            .collect();
        writes.sort_by_key(|w| w.0);
        let mut top = 0u64;
        for (t, i, f, accepted, valid) in &writes {
            if *accepted != (*f >= top) {
                v.push(format!(
                    "[lock-fenced-register] key {k}: call {i}'s write with fence {f} at {t:?} accepted={accepted}, highest accepted {top}"
                ));
            }
            if *accepted {
                top = top.max(*f);
            }
            if *valid
                && s.keys_kept()
                && let Some(later) = grants.iter().find(|g| g.2 > *f && g.1 < *t && g.0 != *i)
            {
                v.push(format!(
                        "[lock-valid] key {k}: call {i} was told is_valid() at {t:?} after call {} was granted at {:?}",
                        later.0, later.1
                    ));
            }
        }
        if s.lease_safe() {
            for (a, ga) in grants.iter().enumerate() {
                let ca = &out.calls[ga.0];
                let a_over = over(ca).unwrap_or(Duration::MAX);
                for gb in &grants[a + 1..] {
                    // Renewal stops short of `max_hold`: the last renewal that
                    // fits leaves at most a lease, so from `max_hold - lease`
                    // after its claim a hung holder may lose the key.
                    let hold_ends = ga.1 + max_hold.saturating_sub(s.lease);
                    if gb.1 + slack < a_over && gb.1 < hold_ends {
                        v.push(format!(
                            "[lock-exclusive] key {k}: call {} entered at {:?} while call {} (entered {:?}) ran until {a_over:?}",
                            gb.0, gb.1, ga.0, ga.1
                        ));
                    }
                }
            }
        }
    }
    for (i, c) in out.calls.iter().enumerate() {
        let probe = i >= s.calls.len();
        if c.busy
            && let Some((t, _)) = &c.end
            && *t - c.start + slack < s.wait
        {
            v.push(format!(
                "[lock-busy-bounded] call {i} was told LockBusy after {:?} of its {:?} wait",
                *t - c.start,
                s.wait
            ));
        }
        if probe && !matches!(&c.end, Some((_, Ok(_)))) {
            v.push(format!(
                "[lock-progress] probe {i} (key {}) after healing ended {:?}",
                key_of(s, out, i),
                c.end
            ));
        }
        if let Some((_, Ok(val))) = &c.end
            && (*val != 1000 + i as u64 || c.body_end.is_none())
        {
            v.push(format!(
                "[lock-progress] call {i} returned {val} but its body was {c:?}"
            ));
        }
    }
    if v.is_empty() {
        Ok(())
    } else {
        Err(v.join("\n"))
    }
}

pub(crate) fn dump(s: &LockSchedule, out: &LockOutput) -> String {
    let mut d = format!("schedule: {s:#?}\ncalls:\n");
    for (i, c) in out.calls.iter().enumerate() {
        d.push_str(&format!("  call {i} key {}: {c:?}\n", key_of(s, out, i)));
    }
    d
}

fn seed_run(seed: u64, verbose: bool) -> SeedRun {
    let s = LockSchedule::generate(seed);
    let out = run(&s);
    let verdict = check(&s, &out);
    let mut outcomes: Vec<String> = out
        .calls
        .iter()
        .map(|c| match &c.end {
            _ if c.busy => "LockBusy".to_owned(),
            Some((_, Ok(_))) => "Ok".to_owned(),
            Some((_, Err(_))) => "Err".to_owned(),
            None => "Gone".to_owned(),
        })
        .collect();
    if out.calls.iter().any(|c| c.write.is_some_and(|w| !w.2)) {
        outcomes.push("stale-write".into());
    }
    let dump = (verbose || verdict.is_err()).then(|| dump(&s, &out));
    SeedRun {
        verdict,
        dump,
        outcomes,
    }
}

#[test]
fn sim_lock_seeded_schedules() {
    super::sweep(
        "lock",
        seed_run,
        &["Ok", "Err", "LockBusy", "Gone", "stale-write"],
    );
}
