//! Deterministic simulation of the guard protocol (issue 7).
//!
//! Each seed draws a small [`Schedule`](schedule::Schedule): a few processes (one
//! `Idem` handle each) sharing one store, duplicate and concurrent calls on one or
//! two keys, bodies that succeed, fail, hang past the lease and `max_hold`, callers
//! that drop their call, store faults from a seeded `FaultPlan` (unavailable, slow,
//! lost reply after apply, lost key before claim), outages, operator `forget`s,
//! whole-store key loss, `purge_expired`, replies delayed after the command
//! applied, and process crashes (every in-flight call of the process dropped, its
//! later store traffic cut). It runs on a current-thread runtime with a paused
//! clock, so leases, ttl, timeouts and backoff all elapse in virtual time and a
//! seed replays exactly (`sim_is_reproducible_from_its_seed`). Then the
//! [`invariants`] are checked against the recorded history and store log.
//!
//! - `IDEM_SIM_SEEDS=N` runs N seeds (default 20 000), `IDEM_SIM_BASE=B` starts at B;
//! - `IDEM_SIM_SEED=S` reruns one seed and prints its whole history;
//! - `IDEM_SIM_REAL_SEEDS=N` sizes the real-store runs of `real.rs` (Redis,
//!   SQLite, PostgreSQL, MariaDB), which reuse the harness in real time.
//!
//! `model/` holds the exhaustive checks (store state machine, local wake-up).
//! A failing seed is printed with the invariant it broke; pin it as an explicit
//! schedule in `regressions.rs` (seeds change meaning when the generator grows).

mod history;
mod invariants;
mod model;
mod per_key_fences;
mod real;
mod recording;
mod regressions;
mod replay;
mod rng;
mod run;
mod schedule;
mod sim_error;
mod tech;

use std::collections::BTreeMap;
use std::time::Instant;

use schedule::Schedule;

/// Backstop detection needs the runtime's `sql` feature (the violation is a
/// `sqlx::Error`); without it schedules use no backstop.
pub(crate) const BACKSTOPS: bool = cfg!(any(
    feature = "sqlite",
    feature = "postgres",
    feature = "mysql"
));

/// What a batch of runs exercised, printed so a reader can see the faults and
/// outcomes the invariants were checked against.
#[derive(Debug, Default)]
struct Tally {
    calls: u64,
    body_runs: u64,
    crashed_calls: u64,
    outcomes: BTreeMap<String, u64>,
    lost_replies: u64,
    lost_keys: u64,
    refused_ops: u64,
}

impl Tally {
    fn add(&mut self, out: &run::RunOutput) {
        self.lost_replies += out.faults.lost_replies;
        self.lost_keys += out.faults.lost_keys;
        self.refused_ops += out.faults.unavailable;
        for (_, e) in &out.events {
            match e {
                history::Ev::CallStart { .. } => self.calls += 1,
                history::Ev::BodyStart { .. } => self.body_runs += 1,
                history::Ev::Crashed { .. } => self.crashed_calls += 1,
                history::Ev::CallEnd { result, .. } => {
                    let name = match result {
                        history::CallResult::Ok { how, .. } => format!("{how:?}"),
                        history::CallResult::Err(history::ErrKind::Rejected(_)) => {
                            "Err(Rejected)".into()
                        }
                        history::CallResult::Err(k) => format!("Err({k:?})"),
                        history::CallResult::Cancelled => "Cancelled".into(),
                    };
                    *self.outcomes.entry(name).or_default() += 1;
                }
                _ => {}
            }
        }
    }

    fn merge(&mut self, o: Tally) {
        self.calls += o.calls;
        self.body_runs += o.body_runs;
        self.crashed_calls += o.crashed_calls;
        self.lost_replies += o.lost_replies;
        self.lost_keys += o.lost_keys;
        self.refused_ops += o.refused_ops;
        for (k, v) in o.outcomes {
            *self.outcomes.entry(k).or_default() += v;
        }
    }
}

/// Runs one seed on the memory store, adding to `tally`; `Err` carries the
/// violation and the dump.
fn run_seed_tally(seed: u64, tally: &mut Tally) -> Result<(), String> {
    let s = Schedule::generate(seed, BACKSTOPS);
    let out = run::run_memory(&s);
    tally.add(&out);
    invariants::check(&s, &out, invariants::Reading::VIRTUAL).map_err(|e| {
        format!(
            "seed {seed} broke an invariant (rerun: IDEM_SIM_SEED={seed}):\n{e}\n{}",
            invariants::dump(&s, &out)
        )
    })
}

pub(crate) fn env_u64(name: &str) -> Option<u64> {
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
    let n = env_u64("IDEM_SIM_SEEDS").unwrap_or(20_000);
    let base = env_u64("IDEM_SIM_BASE").unwrap_or(0);
    let t0 = Instant::now();
    let workers = 2u64;
    let (failures, tally) = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                sc.spawn(move || {
                    let mut fails = Vec::new();
                    let mut tally = Tally::default();
                    let mut seed = base + w;
                    while seed < base + n {
                        if let Err(e) = run_seed_tally(seed, &mut tally) {
                            fails.push((seed, e));
                            if fails.len() >= 3 {
                                break;
                            }
                        }
                        seed += workers;
                    }
                    (fails, tally)
                })
            })
            .collect();
        let mut all: Vec<(u64, String)> = Vec::new();
        let mut tally = Tally::default();
        for h in handles {
            let (f, t) = h.join().expect("a simulation worker");
            all.extend(f);
            tally.merge(t);
        }
        all.sort_by_key(|f| f.0);
        (all.into_iter().map(|f| f.1).collect::<Vec<_>>(), tally)
    });
    println!("simulated {n} schedules in {:?}: {tally:#?}", t0.elapsed());
    // The schedules must actually reach the paths the invariants are about.
    if failures.is_empty() && n >= 10_000 {
        for how in [
            "Executed",
            "Replayed",
            "Waited",
            "Backstop",
            "Degraded",
            "Cancelled",
            "Err(InProgress)",
            "Err(StoreUnavailable)",
            "Err(Mismatch)",
            "Err(Duplicate)",
        ] {
            assert!(
                tally.outcomes.get(how).copied().unwrap_or(0) > 0,
                "no call ended {how}: {tally:#?}"
            );
        }
        assert!(
            tally.crashed_calls > 0 && tally.lost_replies > 0 && tally.lost_keys > 0,
            "{tally:#?}"
        );
    }
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

/// Every generated policy is one the guard accepts before and after issue 10 A1:
/// `lease >= 3 × op_timeout`, in both time profiles.
/// The generator draws both kinds of key: leases of at least 3 op timeouts, and
/// shorter ones whose operation budget the guard clamps to a third of the lease
/// (issue 10 A1), so the simulation covers the clamp as well as the plain budget.
#[test]
fn sim_schedules_cover_clamped_and_plain_budgets() {
    for p in [schedule::Profile::VIRTUAL, schedule::Profile::REAL_TIME] {
        let (mut clamped, mut plain) = (0, 0);
        for seed in 0..5000 {
            let s = Schedule::generate_with(seed, BACKSTOPS, &p);
            for k in &s.keys {
                if k.policy.lease < s.op_timeout * schedule::LEASE_PER_OP_TIMEOUT {
                    clamped += 1;
                } else {
                    plain += 1;
                }
            }
        }
        assert!(
            clamped > 500 && plain > 500,
            "{clamped} clamped, {plain} plain"
        );
    }
}
