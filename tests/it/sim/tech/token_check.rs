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
    for t in 0..s.tokens {
        let of_token = |i: &usize| token_of(s, out, *i) == t;
        let mut runs: Vec<(usize, Duration, Option<Duration>, bool)> = (0..out.calls.len())
            .filter(of_token)
            .filter_map(|i| out.calls[i].body.map(|b| (i, b.0, b.1, b.2)))
            .collect();
        runs.sort_by_key(|r| out.calls[r.0].started);
        // The take spends the token: only a body that ended with an error
        // gives it back, and only then may the next body start.
        for pair in runs.windows(2) {
            let ((ai, a_start, a_end, a_ok), (bi, b_start, ..)) = (pair[0], pair[1]);
            let given_back = matches!(a_end, Some(e) if !a_ok && e <= b_start);
            if !given_back {
                v.push(format!(
                    "[token-once] token {t}: call {ai}'s body (started {a_start:?}, ended {a_end:?}, ok={a_ok}) did not give the token back, yet call {bi} was accepted at {b_start:?}"
                ));
            }
        }
        let probes: Vec<&TokCallInfo> = (s.calls.len()..out.calls.len())
            .filter(of_token)
            .map(|i| &out.calls[i])
            .collect();
        let consumed = runs
            .iter()
            .any(|r| r.3 && r.2.is_some() && r.0 < s.calls.len());
        // A take whose holder went away stays spent: a call whose process
        // crashed after it started (its take may have applied, and its undo
        // or give-back, pending in the background, died with the process), or
        // a caller dropped once its body had started (the body may have done
        // its work).
        let spent_by_a_lost_holder = (0..s.calls.len()).filter(of_token).any(|i| {
            let (c, call) = (&out.calls[i], &s.calls[i]);
            let crashed_since = s
                .events
                .iter()
                .any(|(t, e)| matches!(e, TokEvent::Crash(p) if *p == call.proc && *t >= call.at));
            crashed_since || (c.body.is_some() && matches!(c.end, Some((_, TokResult::Cancelled))))
        });
        let accepted = probes.iter().any(|p| p.body.is_some());
        let excused = consumed || out.flushed || spent_by_a_lost_holder || s.refusing();
        if !excused && !accepted {
            v.push(format!(
                "[give-back] token {t}: no body consumed it and no holder was lost, yet no probe was accepted: {:?}",
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
            "Unavailable",
            "Cancelled",
            "give-back",
        ],
    );
}
