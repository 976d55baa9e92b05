//! The token's invariants (listed in `token.rs`), its dump and its sweep.

use std::time::Duration;

use super::SeedRun;
use super::faults::What;
use super::token::{TokCallInfo, TokEvent, TokOutput, TokResult, TokSchedule, run};

fn token_of(s: &TokSchedule, out: &TokOutput, i: usize) -> usize {
    if i < s.calls.len() {
        s.calls[i].token
    } else {
        out.probe_tokens[i - s.calls.len()]
    }
}

/// The invariants of the module docs.
pub(crate) fn check(s: &TokSchedule, out: &TokOutput) -> Result<(), String> {
    let mut v = Vec::new();
    let max_hold = s.max_hold.unwrap_or(s.lease * 20);
    for t in 0..s.tokens {
        let mut runs: Vec<(usize, Duration, Option<Duration>, bool)> = out
            .calls
            .iter()
            .enumerate()
            .filter(|(i, _)| token_of(s, out, *i) == t)
            .filter_map(|(i, c)| c.body.map(|b| (i, b.0, b.1, b.2)))
            .collect();
        runs.sort_by_key(|r| out.calls[r.0].started);
        for (k, a) in runs.iter().enumerate() {
            let (ai, a_start, Some(a_end), true) = *a else {
                continue;
            };
            let ac = &out.calls[ai];
            let returned = !matches!(ac.end, None | Some((_, TokResult::Cancelled)));
            // A crash of the caller's process after its body succeeded but
            // before the detached consume reached the store cuts that finish
            // (nothing durable knows the body succeeded): the lease returns
            // the token, as a crash during the call would.
            let finish_cut = s.calls.get(ai).is_some_and(|c| {
                s.events.iter().any(|(tc, e)| {
                    matches!(e, TokEvent::Crash(p) if *p == c.proc)
                        && *tc >= a_end
                        && !out.log.iter().any(|l| {
                            l.call == Some(ai)
                                && matches!(l.what, What::Revoke { .. })
                                && l.t <= *tc
                        })
                })
            });
            let excused = ac.crashed || finish_cut || s.refusing() || (returned && s.unreliable());
            if excused {
                continue;
            }
            // Renewal stops short of `max_hold` (the last renewal that fits
            // leaves at most a lease): a hung body may lose the token from
            // `max_hold - lease` after it started.
            let hold_ends = a_start + max_hold.saturating_sub(s.lease);
            if let Some(b) = runs.get(k + 1).filter(|b| b.1 < hold_ends || a_end < b.1) {
                v.push(format!(
                    "[token-once] token {t}: call {ai}'s body succeeded at {a_end:?} (call ended {:?}), yet call {} was accepted at {:?}",
                    ac.end, b.0, b.1
                ));
            }
        }
        let probes: Vec<&TokCallInfo> = (s.calls.len()..out.calls.len())
            .filter(|i| token_of(s, out, *i) == t)
            .map(|i| &out.calls[i])
            .collect();
        let consumed = runs
            .iter()
            .any(|r| r.3 && r.2.is_some() && r.0 < s.calls.len());
        let accepted = probes.iter().any(|p| p.body.is_some());
        if !consumed && !out.flushed && !accepted {
            v.push(format!(
                "[give-back] token {t}: no body consumed it, yet no probe was accepted: {:?}",
                probes.iter().map(|p| &p.end).collect::<Vec<_>>()
            ));
        }
    }
    for (i, c) in out.calls.iter().enumerate() {
        let probe = i >= s.calls.len();
        match &c.end {
            Some((
                _,
                r @ (TokResult::Invalid | TokResult::InProgress | TokResult::Unavailable),
            )) if c.body.is_some() => {
                v.push(format!(
                    "[fail-closed] call {i} ran its body and ended {r:?}"
                ));
            }
            Some((_, r @ (TokResult::InProgress | TokResult::Unavailable))) if probe => {
                v.push(format!("[progress] probe {i} after healing ended {r:?}"));
            }
            Some((_, TokResult::Other(e))) => {
                v.push(format!("[fail-closed] call {i}: unexpected error {e}"));
            }
            _ => {}
        }
        if let (Some((_, Some(_), ok)), Some((_, r))) = (c.body, &c.end) {
            let fine = match r {
                TokResult::Cancelled => true,
                TokResult::Executed(val) => ok && *val == 1000 + i as u64,
                TokResult::Failed => !ok,
                _ => false,
            };
            if !fine {
                v.push(format!(
                    "[body-result] call {i}'s body ended ok={ok} but the call returned {r:?}"
                ));
            }
        }
    }
    if v.is_empty() {
        Ok(())
    } else {
        Err(v.join("\n"))
    }
}

pub(crate) fn dump(s: &TokSchedule, out: &TokOutput) -> String {
    let mut d = format!("schedule: {s:#?}\ntoken log (applied):\n");
    for a in &out.log {
        let key = &a.key[a.key.len().saturating_sub(8)..];
        d.push_str(&format!(
            "  {:>8?} call {:?} token …{key}: {:?}\n",
            a.t, a.call, a.what
        ));
    }
    d.push_str("calls:\n");
    for (i, c) in out.calls.iter().enumerate() {
        d.push_str(&format!(
            "  call {i} token {}: {c:?}\n",
            token_of(s, out, i)
        ));
    }
    d
}

fn seed_run(seed: u64, verbose: bool) -> SeedRun {
    let s = TokSchedule::generate(seed);
    let out = run(&s);
    let verdict = check(&s, &out);
    let mut outcomes: Vec<String> = out
        .calls
        .iter()
        .filter_map(|c| c.end.as_ref())
        .map(|e| match &e.1 {
            TokResult::Executed(_) => "Executed".to_owned(),
            TokResult::Other(_) => "Other".to_owned(),
            r => format!("{r:?}"),
        })
        .collect();
    if out
        .log
        .iter()
        .any(|a| matches!(a.what, What::GiveBack { .. }))
    {
        outcomes.push("give-back".into());
    }
    let dump = (verbose || verdict.is_err()).then(|| dump(&s, &out));
    SeedRun {
        verdict,
        dump,
        outcomes,
    }
}

#[test]
fn sim_token_seeded_schedules() {
    super::sweep(
        "token",
        seed_run,
        &[
            "Executed",
            "Failed",
            "Invalid",
            "InProgress",
            "Unavailable",
            "Cancelled",
            "give-back",
        ],
    );
}
