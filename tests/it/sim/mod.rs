//! Deterministic simulation of the guard protocol (issue 7).
//!
//! Each seed draws a small [`Schedule`](schedule::Schedule): a few processes (one
//! `Idem` handle each) sharing one store, duplicate and concurrent calls on one or
//! two keys, bodies that succeed, fail, hang past the lease and `max_hold`, callers
//! that drop their call, store faults from a seeded `FaultPlan` (unavailable, slow,
//! lost reply after apply, lost key before claim), outages, operator `forget`s,
//! whole-store key loss and process crashes. It runs on a current-thread runtime
//! with a paused clock, so leases, ttl, timeouts and backoff all elapse in virtual
//! time and a seed replays exactly. Then [`invariants`] are checked against the
//! recorded history and store log.
//!
//! - `IDEM_SIM_SEEDS=N` runs N seeds (default 10 000);
//! - `IDEM_SIM_SEED=S` reruns one seed and prints its whole history.
//!
//! A failing seed is printed with the invariant it broke; pin it as a regression
//! test in `regressions.rs`.

mod history;
mod invariants;
mod model;
mod real;
mod recording;
mod regressions;
mod run;
mod schedule;

use std::time::Instant;

use schedule::Schedule;

/// Backstop detection needs the runtime's `sql` feature (the violation is a
/// `sqlx::Error`); without it schedules use no backstop.
pub(crate) const BACKSTOPS: bool = cfg!(any(
    feature = "sqlite",
    feature = "postgres",
    feature = "mysql"
));

/// Runs one seed on the memory store; `Err` carries the violation and the dump.
pub(crate) fn run_seed(seed: u64) -> Result<(), String> {
    let s = Schedule::generate(seed, BACKSTOPS);
    let out = run::run_memory(&s);
    invariants::check(&s, &out, invariants::Reading::VIRTUAL).map_err(|e| {
        format!(
            "seed {seed} broke an invariant (rerun: IDEM_SIM_SEED={seed}):\n{e}\n{}",
            invariants::dump(&s, &out)
        )
    })
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

#[test]
fn sim_memory_seeded_schedules() {
    if let Some(seed) = env_u64("IDEM_SIM_SEED") {
        let s = Schedule::generate(seed, BACKSTOPS);
        let out = run::run_memory(&s);
        println!("{}", invariants::dump(&s, &out));
        if let Err(e) = invariants::check(&s, &out, invariants::Reading::VIRTUAL) {
            panic!("seed {seed}:\n{e}");
        }
        return;
    }
    let n = env_u64("IDEM_SIM_SEEDS").unwrap_or(10_000);
    let base = env_u64("IDEM_SIM_BASE").unwrap_or(0);
    let t0 = Instant::now();
    let workers = 2u64;
    let failures: Vec<String> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                sc.spawn(move || {
                    let mut fails = Vec::new();
                    let mut seed = base + w;
                    while seed < base + n {
                        if let Err(e) = run_seed(seed) {
                            fails.push((seed, e));
                            if fails.len() >= 3 {
                                break;
                            }
                        }
                        seed += workers;
                    }
                    fails
                })
            })
            .collect();
        let mut all: Vec<(u64, String)> = handles
            .into_iter()
            .flat_map(|h| h.join().expect("a simulation worker"))
            .collect();
        all.sort_by_key(|f| f.0);
        all.into_iter().map(|f| f.1).collect()
    });
    println!("simulated {n} schedules in {:?}", t0.elapsed());
    if let Some(first) = failures.first() {
        let seeds: Vec<&str> = failures
            .iter()
            .filter_map(|f| f.split_whitespace().nth(1))
            .collect();
        panic!(
            "{} failing seeds (first shown): {seeds:?}\n{first}",
            failures.len()
        );
    }
}

#[test]
fn sim_is_reproducible_from_its_seed() {
    for seed in [1u64, 77, 4242] {
        let s = Schedule::generate(seed, BACKSTOPS);
        let a = run::run_memory(&s);
        let b = run::run_memory(&s);
        assert_eq!(
            normalise(&a),
            normalise(&b),
            "seed {seed} replayed differently"
        );
        assert!(!a.events.is_empty(), "seed {seed} recorded nothing");
    }
}

/// The history with fences replaced by their rank (fences come from the wall
/// clock, so their raw values differ between replays; their order does not).
fn normalise(out: &run::RunOutput) -> Vec<String> {
    let mut fences: Vec<u64> = out
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            history::Ev::BodyStart { fence, .. } => Some(*fence),
            _ => None,
        })
        .collect();
    fences.sort();
    fences.dedup();
    let rank = |f: u64| fences.binary_search(&f).map_or(usize::MAX, |i| i);
    out.events
        .iter()
        .map(|(t, e)| {
            let e = match e {
                history::Ev::BodyStart { call, fence } => {
                    format!("BodyStart {call} #{}", rank(*fence))
                }
                history::Ev::FencedWrite {
                    call,
                    fence,
                    accepted,
                } => {
                    format!("FencedWrite {call} #{} {accepted}", rank(*fence))
                }
                history::Ev::CallEnd {
                    call,
                    result: history::CallResult::Ok { how, value, fence },
                    elapsed,
                } => {
                    format!(
                        "CallEnd {call} {how:?} {value} #{} {elapsed:?}",
                        rank(*fence)
                    )
                }
                other => format!("{other:?}"),
            };
            format!("{t:?} {e}")
        })
        .collect()
}
