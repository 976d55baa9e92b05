//! The transactional guard's invariants checked after the run (the others,
//! listed in `txguard.rs`, are checked between its transactions), its dump
//! and its sweep.

use idem::How;

use super::SeedRun;
use super::txguard::{TxCall, TxResult, TxSchedule, TxStep, run};

pub(crate) fn check(s: &TxSchedule, steps: &[TxStep]) -> Result<(), String> {
    let mut v = Vec::new();
    // Keys with an unfinished claim a dropped caller left in a committed
    // transaction: `InProgress` there is tx-no-stuck-claim's to judge.
    let mut dangling = vec![false; s.keys];
    for (ti, st) in steps.iter().enumerate() {
        v.extend(st.violations.iter().cloned());
        let mut here = dangling.clone();
        let calls = if ti < s.txs.len() {
            s.txs[ti].calls.clone()
        } else {
            vec![TxCall {
                key: (ti - s.txs.len()) / s.procs,
                ok: true,
                cut: None,
            }]
        };
        let mut executed: Vec<(usize, u64)> = Vec::new();
        for (ci, (c, (id, r))) in calls.iter().zip(&st.results).enumerate() {
            match r {
                TxResult::Ok(How::Executed, val) => {
                    if *val != 1000 + *id as u64 || !st.body_ran[ci] {
                        v.push(format!("[tx-replay-first] call {id} executed with {val}"));
                    }
                    executed.push((c.key, *val));
                }
                TxResult::Ok(how, val) => {
                    let fine = st.committed_before[c.key] == Some(*val)
                        || executed.contains(&(c.key, *val));
                    if !fine || st.body_ran[ci] {
                        v.push(format!(
                            "[tx-replay-first] call {id} (transaction {ti}, key {}) got {how:?} {val}; the table held {:?} when the transaction began",
                            c.key, st.committed_before[c.key]
                        ));
                    }
                }
                TxResult::BodyFailed if !c.ok => {}
                TxResult::Cut => {
                    // Its record may have been completed before the cut: a
                    // later call of this transaction may replay it.
                    here[c.key] = true;
                    if st.body_ran[ci] {
                        executed.push((c.key, 1000 + *id as u64));
                    }
                }
                TxResult::InProgress if here[c.key] => {}
                other => v.push(format!(
                    "[tx-errors] call {id} (transaction {ti}): {other:?}"
                )),
            }
        }
        if ti < s.txs.len() && s.txs[ti].commit {
            dangling = here;
        }
    }
    if v.is_empty() {
        Ok(())
    } else {
        Err(v.join("\n"))
    }
}

pub(crate) fn dump(s: &TxSchedule, steps: &[TxStep]) -> String {
    let mut d = format!("schedule: {s:#?}\ntransactions:\n");
    for (ti, st) in steps.iter().enumerate() {
        d.push_str(&format!(
            "  {ti}: table before {:?}; calls {:?} (bodies ran {:?})\n",
            st.committed_before, st.results, st.body_ran
        ));
    }
    d
}

fn seed_run(seed: u64, verbose: bool) -> SeedRun {
    let s = TxSchedule::generate(seed);
    let steps = run(&s);
    let verdict = check(&s, &steps);
    let outcomes = steps
        .iter()
        .flat_map(|st| st.results.iter())
        .map(|(_, r)| match r {
            TxResult::Ok(how, _) => format!("{how:?}"),
            TxResult::Err(_) => "Err".into(),
            other => format!("{other:?}"),
        })
        .collect();
    let dump = (verbose || verdict.is_err()).then(|| dump(&s, &steps));
    SeedRun {
        verdict,
        dump,
        outcomes,
    }
}

#[test]
fn sim_txguard_seeded_schedules() {
    super::sweep(
        "txguard",
        seed_run,
        &["Executed", "Replayed", "BodyFailed", "Cut"],
    );
}
