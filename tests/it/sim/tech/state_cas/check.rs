//! The check-and-set simulation's invariants (the table in the parent's
//! module docs), checked on one run's output, and the dump a failing seed prints.

use super::*;

/// The invariants of the module docs.
pub(crate) fn check(s: &CasSchedule, out: &CasOutput) -> Result<(), String> {
    let mut v = Vec::new();
    for c in &s.calls {
        let mine: Vec<&Applied> = out.log.iter().filter(|a| a.call == Some(c.id)).collect();
        let applied = mine.iter().any(|a| {
            matches!(
                &a.what,
                What::Cas {
                    res: StateCas::Applied,
                    ..
                }
            )
        });
        let Some((t0, t1, res)) = &out.ends[c.id] else {
            continue;
        };
        if let CasResult::Ok(r) = res {
            // A FLUSHALL after the applying attempt erases what the store
            // knew of it: nothing can tell the retry it applied.
            let applied_at = mine.iter().find(|a| {
                matches!(
                    &a.what,
                    What::Cas {
                        res: StateCas::Applied,
                        ..
                    }
                )
            });
            let flushed_since = applied_at.is_some_and(|a| {
                s.events
                    .iter()
                    .any(|(t, e)| matches!(e, CasEvent::FlushAll) && *t >= a.t && t <= t1)
            });
            if applied && !flushed_since && *r != StateCas::Applied {
                v.push(format!(
                    "[cas-applier-told] call {} applied {:?} itself but was told {r:?}",
                    c.id, EDGES[c.edge]
                ));
            }
            let backed = mine
                .iter()
                .any(|a| matches!(&a.what, What::Cas { res, .. } if res == r));
            if !backed {
                v.push(format!(
                    "[cas-answer-backed] call {} was told {r:?}, which none of its attempts found",
                    c.id
                ));
            }
        }
        let limit = 2 * s.op_timeout + Duration::from_millis(120);
        if *t1 - *t0 > limit {
            v.push(format!(
                "[bounded] call {} took {:?} (limit {limit:?})",
                c.id,
                *t1 - *t0
            ));
        }
    }
    for key in &out.keys {
        let mut entered: Vec<(&str, Duration, Option<usize>)> = Vec::new();
        for a in out.log.iter().filter(|a| &a.key == key) {
            if let What::Cas {
                to,
                res: StateCas::Applied,
            } = &a.what
            {
                // The applier's own retry after a lost reply is told `Applied`
                // again (issue 24 f): one entry, not two.
                if let Some((_, t, _)) = entered.iter().find(|(s, t, c)| {
                    s == to && *c != a.call && !out.flushes.iter().any(|f| *t <= *f && *f <= a.t)
                }) {
                    v.push(format!(
                        "[cas-once] {key} entered {to} at {t:?} and again at {:?}",
                        a.t
                    ));
                }
                entered.push((to, a.t, a.call));
            }
        }
    }
    for p in &out.probes_ok {
        v.push(format!("[progress] after healing, {p}"));
    }
    if v.is_empty() {
        Ok(())
    } else {
        Err(v.join("\n"))
    }
}

pub(crate) fn dump(s: &CasSchedule, out: &CasOutput) -> String {
    let mut d = format!("schedule: {s:#?}\nstore log (applied):\n");
    for a in &out.log {
        d.push_str(&format!(
            "  {:>8?} call {:?} {}: {:?}\n",
            a.t, a.call, a.key, a.what
        ));
    }
    d.push_str("calls:\n");
    for (i, e) in out.ends.iter().enumerate() {
        d.push_str(&format!("  call {i} {:?}: {e:?}\n", EDGES[s.calls[i].edge]));
    }
    d
}
