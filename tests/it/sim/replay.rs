//! A seed replays the same run in another test process: CI's process is not
//! the one that found the seed. Every source of variation must come from the
//! seed, not from the process (its pid, a process-wide counter, the hasher).
//!
//! The other process is this test binary run again with `IDEM_SIM_REPLAY` set,
//! selecting [`replay_process_entry`] only; it prints one digest per seed and
//! technique, and the parent compares them with its own runs.

use std::process::Command;

#[cfg(all(feature = "axum", feature = "sqlite"))]
use super::tech::http::HttpSchedule;
use super::tech::state_cas::CasSchedule;
use super::tech::token::TokSchedule;
use super::{BACKSTOPS, Schedule, normalise, run};

/// Seeds whose runs wait on busy keys and retry, so they draw jitter; 729802
/// is the token seed CI replayed differently (2026-12-02).
const SEEDS: [u64; 4] = [77, 4242, 729_802, 843_061];

/// One line per (technique, seed): what the run did, with nothing in it that
/// may differ between processes by design (fences are ranked, owners left out).
fn digests() -> Vec<String> {
    let mut out = Vec::new();
    for seed in SEEDS {
        let g = run::run_memory(&Schedule::generate(seed, BACKSTOPS));
        out.push(format!("guard {seed} {:?}", normalise(&g)));
        let t = super::tech::token::run(&TokSchedule::generate(seed));
        out.push(format!("token {seed} {:?}", t.calls));
        let c = super::tech::state_cas::run(&CasSchedule::generate(seed));
        out.push(format!("state_cas {seed} {:?}", c.ends));
        #[cfg(all(feature = "axum", feature = "sqlite"))]
        {
            let (h, _) = super::tech::http::run(&HttpSchedule::generate(seed));
            out.push(format!("http {seed} {h:?}"));
        }
    }
    out
}

#[test]
fn sim_seeds_replay_in_another_process() {
    let here = digests();
    let child = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "sim::replay::replay_process_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("IDEM_SIM_REPLAY", "1")
        .output()
        .expect("run the test binary again");
    assert!(child.status.success(), "the replaying process failed");
    let stdout = String::from_utf8_lossy(&child.stdout);
    let there: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("digest "))
        .collect();
    assert_eq!(
        there.len(),
        here.len(),
        "the replaying process printed {stdout}"
    );
    for (a, b) in here.iter().zip(there) {
        let name: Vec<&str> = a.splitn(3, ' ').take(2).collect();
        assert_eq!(a, b, "{name:?} ran differently in another process");
    }
}

/// The replaying process's `main` (see the module docs); in a normal run it
/// returns at once.
#[test]
fn replay_process_entry() {
    if std::env::var_os("IDEM_SIM_REPLAY").is_none() {
        return;
    }
    // A new line first: the harness prints the test's name without one.
    println!();
    for d in digests() {
        println!("digest {d}");
    }
}
