//! Every technique in the simulator (issue 25), beside the guard's own run in
//! `sim/run.rs`: each file draws its schedules from a seed, runs them, and
//! checks its invariants on the recorded history.
//!
//! | technique | file | clock | store / database |
//! |---|---|---|---|
//! | state check-and-set | `state_cas.rs` | virtual | memory states behind [`faults`] |
//! | one-time tokens | `token.rs` | virtual | memory tokens behind [`faults`] |
//! | distributed lock + fenced write | `lock.rs` | virtual | the guard's store chain (`FaultyStore`), a modelled row |
//! | `Optimistic` | `optimistic.rs` | real (no timers) | SQLite in memory, the caller's database |
//! | `RowLock` + `InsertOnce` | `row_once.rs` | real (no timers) | SQLite in memory, the caller's database |
//! | transactional guard + front store | `txguard.rs` | real (no timers) | SQLite in memory, memory front behind `FaultyStore` |
//! | consume log under redelivery | `consume.rs` | real (no timers) | SQLite in memory |
//! | HTTP layer (`tower::Service`, no sockets) | `http.rs` | virtual | the guard's store chain (`FaultyStore`) |
//! | outbox relay, several relays, crashes | `outbox.rs` | real (leases under a second) | SQLite in memory, a model broker |
//!
//! The SQL techniques run on a real SQLite in memory rather than a model of
//! one: its transactions, savepoints, commit and rollback are the real
//! semantics, and no seam in the runtime is needed. Their schedules have no
//! timers (cancellation is "drop at the n-th await"), so they replay exactly
//! without a paused clock.
//!
//! Knobs: `IDEM_SIM_<TECH>_SEEDS=N` (`TECH` = `CAS`, `TOKEN`, `LOCK`,
//! `OPTIMISTIC`, `ROW_ONCE`, `TXGUARD`, `CONSUME`, `HTTP`), else `IDEM_SIM_TECH_SEEDS`, else 5 000;
//! the outbox, whose seeds run in real time, reads `IDEM_SIM_OUTBOX_SEEDS` only
//! (default 32);
//! `IDEM_SIM_<TECH>_BASE` / `IDEM_SIM_BASE` the first seed;
//! `IDEM_SIM_<TECH>_SEED=S` reruns one seed and prints its history.

use std::collections::BTreeMap;
use std::time::Instant;

#[cfg(feature = "sqlite")]
pub(crate) mod consume;
pub(crate) mod faults;
#[cfg(feature = "sqlite")]
mod fenced_row;
#[cfg(all(feature = "axum", feature = "sqlite"))]
pub(crate) mod http;
#[cfg(all(feature = "axum", feature = "sqlite"))]
mod http_check;
#[cfg(feature = "sqlite")]
pub(crate) mod lock;
#[cfg(feature = "sqlite")]
mod lock_check;
#[cfg(feature = "sqlite")]
pub(crate) mod optimistic;
#[cfg(all(feature = "sqlite", any(feature = "nats", feature = "rabbitmq")))]
pub(crate) mod outbox;
#[cfg(all(feature = "sqlite", any(feature = "nats", feature = "rabbitmq")))]
pub(crate) mod outbox_broker;
#[cfg(all(feature = "sqlite", any(feature = "nats", feature = "rabbitmq")))]
pub(crate) mod outbox_check;
#[cfg(all(feature = "sqlite", any(feature = "nats", feature = "rabbitmq")))]
mod outbox_consume;
#[cfg(all(feature = "sqlite", any(feature = "nats", feature = "rabbitmq")))]
pub(crate) mod outbox_dump;
#[cfg(all(feature = "sqlite", any(feature = "nats", feature = "rabbitmq")))]
pub(crate) mod outbox_produce;
#[cfg(all(feature = "sqlite", any(feature = "nats", feature = "rabbitmq")))]
pub(crate) mod outbox_run;
mod proc_store;
#[cfg(feature = "sqlite")]
mod row_once;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;
pub(crate) mod state_cas;
pub(crate) mod token;
pub(crate) mod token_check;
#[cfg(feature = "sqlite")]
pub(crate) mod txguard;
#[cfg(feature = "sqlite")]
pub(crate) mod txguard_check;

pub(crate) use super::env_u64;

/// What one seed did: its verdict, its history when asked for (or failed),
/// and the outcome names it reached (for the coverage check).
pub(crate) struct SeedRun {
    pub(crate) verdict: Result<(), String>,
    pub(crate) dump: Option<String>,
    pub(crate) outcomes: Vec<String>,
}

/// Runs `IDEM_SIM_<TECH>_SEEDS` seeds of one technique on two threads and
/// panics with the failing seeds; `must_see` are outcomes a large enough run
/// must reach (so a generator that stopped exercising a path is noticed).
pub(crate) fn sweep(tech: &str, run: fn(u64, bool) -> SeedRun, must_see: &[&str]) {
    let n = env_u64(&format!("IDEM_SIM_{}_SEEDS", tech.to_uppercase()))
        .or_else(|| env_u64("IDEM_SIM_TECH_SEEDS"))
        .unwrap_or(5_000);
    sweep_n(tech, n, 2_000, run, must_see);
}

/// [`sweep`] for a technique whose seeds run in real time (seconds, not
/// microseconds): `IDEM_SIM_<TECH>_SEEDS` only (the shared knob sizes the
/// fast ones), `default` seeds without it, the coverage check from
/// `coverage_from` seeds.
pub(crate) fn sweep_sized(
    tech: &str,
    default: u64,
    coverage_from: u64,
    run: fn(u64, bool) -> SeedRun,
    must_see: &[&str],
) {
    let n = env_u64(&format!("IDEM_SIM_{}_SEEDS", tech.to_uppercase())).unwrap_or(default);
    sweep_n(tech, n, coverage_from, run, must_see);
}

fn sweep_n(
    tech: &str,
    n: u64,
    coverage_from: u64,
    run: fn(u64, bool) -> SeedRun,
    must_see: &[&str],
) {
    let up = tech.to_uppercase();
    if let Some(seed) = env_u64(&format!("IDEM_SIM_{up}_SEED")) {
        let r = run(seed, true);
        println!("{}", r.dump.unwrap_or_default());
        if let Err(e) = r.verdict {
            panic!("{tech} seed {seed}:\n{e}");
        }
        return;
    }
    let base = env_u64(&format!("IDEM_SIM_{up}_BASE"))
        .or_else(|| env_u64("IDEM_SIM_BASE"))
        .unwrap_or(0);
    let t0 = Instant::now();
    let workers = 2u64;
    let (mut fails, seen) = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..workers)
            .map(|w| {
                sc.spawn(move || {
                    let mut fails = Vec::new();
                    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
                    let mut seed = base + w;
                    while seed < base + n {
                        let r = run(seed, false);
                        for o in r.outcomes {
                            *seen.entry(o).or_default() += 1;
                        }
                        if let Err(e) = r.verdict {
                            fails.push((seed, e, r.dump.unwrap_or_default()));
                            if fails.len() >= 3 {
                                break;
                            }
                        }
                        seed += workers;
                    }
                    (fails, seen)
                })
            })
            .collect();
        let mut all = Vec::new();
        let mut seen: BTreeMap<String, u64> = BTreeMap::new();
        for h in hs {
            let (f, s) = h.join().expect("a simulation worker");
            all.extend(f);
            for (k, v) in s {
                *seen.entry(k).or_default() += v;
            }
        }
        (all, seen)
    });
    let dt = t0.elapsed();
    println!(
        "{tech}: simulated {n} schedules in {dt:?} ({:.0} seeds/s): {seen:#?}",
        n as f64 / dt.as_secs_f64().max(1e-9)
    );
    fails.sort_by_key(|f| f.0);
    if let Some((seed, e, dump)) = fails.first() {
        let seeds: Vec<u64> = fails.iter().map(|f| f.0).collect();
        panic!(
            "{tech}: failing seeds {seeds:?} (rerun: IDEM_SIM_{up}_SEED={seed})\nseed {seed}:\n{e}\n{dump}"
        );
    }
    if n >= coverage_from {
        for o in must_see {
            assert!(
                seen.get(*o).copied().unwrap_or(0) > 0,
                "{tech}: no schedule reached `{o}`: {seen:#?}"
            );
        }
    }
}

/// A paused current-thread runtime: leases, timeouts and backoff in virtual time.
pub(crate) fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime")
}

/// The jitter seed of the `incarnation`th simulated process of the run of
/// `seed`. The runtime seeds its jitter from the pid, which differs between
/// the test process that found a seed and the one that replays it (CI's).
pub(crate) fn jitter_seed(seed: u64, incarnation: u64) -> u64 {
    seed ^ incarnation
        .wrapping_add(1)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
}
