//! The HTTP layer's invariants (listed in `http.rs`), its dump and its sweep.

use std::time::Duration;

use super::SeedRun;
use super::http::{HttpInfo, HttpSchedule, run};

pub(crate) fn check(
    s: &HttpSchedule,
    out: &[HttpInfo],
    probes: &[(usize, usize)],
) -> Result<(), String> {
    let mut v = Vec::new();
    let key_of = |i: usize| {
        s.calls
            .get(i)
            .map(|c| c.key)
            .unwrap_or_else(|| probes[i - s.calls.len()].1)
    };
    let body_of = |i: usize| s.calls.get(i).map(|c| c.body).unwrap_or(0);
    for k in 0..s.keys {
        let mut runs: Vec<(usize, Duration)> = (0..out.len())
            .filter(|i| key_of(*i) == k)
            .filter_map(|i| out[i].handler.map(|h| (i, h.0)))
            .collect();
        runs.sort_by_key(|r| out[r.0].started);
        let keys_kept = s.plan.is_none_or(|p| p.lost_key == 0.0);
        if s.lease_safe() && keys_kept {
            for (a, (ai, _)) in runs.iter().enumerate() {
                let delivered = matches!(out[*ai].answer, Some((201, _, false)));
                if let (true, Some(b)) = (delivered, runs.get(a + 1)) {
                    v.push(format!(
                        "[http-once] key k{k}: request {ai}'s 201 reached its client, yet request {}'s handler ran at {:?}",
                        b.0, b.1
                    ));
                }
            }
        }
    }
    for (i, info) in out.iter().enumerate() {
        let Some((status, body, replayed)) = &info.answer else {
            continue;
        };
        let k = key_of(i);
        if *replayed {
            let src = body
                .strip_prefix("order ")
                .and_then(|n| n.parse::<usize>().ok());
            let fine = src.is_some_and(|j| {
                j < out.len()
                    && key_of(j) == k
                    && body_of(j) == body_of(i)
                    && matches!(out[j].handler, Some((_, Some(_), 201)))
            });
            if !fine || *status != 201 {
                v.push(format!(
                    "[http-replay-first] request {i} (key k{k}) replayed {status} {body:?}"
                ));
            }
        }
        if *status == 422 && !(0..out.len()).any(|j| key_of(j) == k && body_of(j) != body_of(i)) {
            v.push(format!(
                "[http-mismatch] request {i} got 422 with no other body on key k{k}"
            ));
        }
    }
    for (id, k) in probes {
        match &out[*id].answer {
            Some((201, _, _)) => {}
            Some((422, _, _)) if (0..s.calls.len()).any(|j| key_of(j) == *k && body_of(j) != 0) => {
            }
            other => v.push(format!(
                "[http-progress] probe {id} on key k{k} after healing got {other:?}"
            )),
        }
    }
    if v.is_empty() {
        Ok(())
    } else {
        Err(v.join("\n"))
    }
}

fn seed_run(seed: u64, verbose: bool) -> SeedRun {
    let s = HttpSchedule::generate(seed);
    let (out, probes) = run(&s);
    let verdict = check(&s, &out, &probes);
    let outcomes = out
        .iter()
        .map(|i| match &i.answer {
            None => "dropped".to_owned(),
            Some((st, _, true)) => format!("{st} replayed"),
            Some((st, _, false)) => st.to_string(),
        })
        .collect();
    let dump = (verbose || verdict.is_err()).then(|| {
        let mut d = format!("seed {}: {s:#?}\n", s.seed);
        for (i, info) in out.iter().enumerate() {
            d.push_str(&format!("  request {i}: {info:?}\n"));
        }
        d
    });
    SeedRun {
        verdict,
        dump,
        outcomes,
    }
}

#[test]
fn sim_http_seeded_schedules() {
    super::sweep("http", seed_run, &["201", "201 replayed", "500", "dropped"]);
}
