//! The incident, scripted: 8 tasks make 200 calls over 50 keys (each key
//! by 4 tasks at once, behind a barrier, with a 20 ms body), and a 3 s black hole
//! opens in the middle (rounds every 250 ms: 3 before it, 12 in it, 10 after). Run once with `degrade = "backstop"` and once with the
//! in-process claim (`degrade_local`). Checked: no duplicate rows; every call
//! counted once, under the outcome it reported; body runs = executed +
//! not_stored + degraded + backstop; degraded calls that hit the constraint are
//! the degraded backstop hits; the breaker lets calls through again within one
//! cooldown (plus slack) of the heal; the in-process claim cuts body runs per key.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem::observe::CallOutcome;
use idem::reported;
use tokio::sync::Barrier;

use super::{Mode, Rig};

const TASKS: usize = 8;
const ROUNDS: usize = 25;
const PER_KEY: usize = 4;
const HOLE_AT: Duration = Duration::from_millis(600);
const HOLE: Duration = Duration::from_secs(3);
const COOLDOWN: Duration = Duration::from_secs(1);
const ROUND: Duration = Duration::from_millis(250);

/// One call as its caller saw it.
#[derive(Debug, Clone, Copy)]
struct Seen {
    started: Instant,
    outcome: CallOutcome,
    hit: bool,
    stored: bool,
}

struct Run {
    runs_per_key: Vec<u32>,
    degraded_after_heal: usize,
    heal_to_first_stored: Duration,
    stats: idem::Stats,
}

async fn burst(mode: Mode) -> Run {
    let rig = Arc::new(Rig::start(COOLDOWN).await);
    let barrier = Arc::new(Barrier::new(TASKS));
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let (rig, barrier) = (Arc::clone(&rig), Arc::clone(&barrier));
            tokio::spawn(async move {
                let mut seen = Vec::new();
                for round in 0..ROUNDS {
                    // Rounds every 250 ms: 3 before the hole, 12 in it, 10 after.
                    tokio::time::sleep_until((t0 + ROUND * round as u32).into()).await;
                    barrier.wait().await;
                    let key = round * (TASKS / PER_KEY) + t / PER_KEY;
                    let started = Instant::now();
                    let no = format!("o{key}");
                    let fut = rig
                        .orders
                        .create(&rig.idem, &no, mode, Duration::from_millis(20));
                    let (r, report) = reported(fut).await;
                    let out = r.unwrap_or_else(|e| panic!("{mode:?} key {key}: {e:?}"));
                    let report = report.unwrap();
                    seen.push(Seen {
                        started,
                        outcome: report.outcome(),
                        hit: report.is_backstop_hit(),
                        stored: out.is_stored(),
                    });
                }
                seen
            })
        })
        .collect();
    tokio::time::sleep(HOLE_AT).await;
    rig.proxy.black_hole();
    tokio::time::sleep(HOLE).await;
    rig.proxy.heal();
    let healed = Instant::now();
    let mut seen = Vec::new();
    for t in tasks {
        seen.extend(t.await.unwrap());
    }
    let elapsed = t0.elapsed();
    assert!(
        seen.iter().any(|s| s.started > healed),
        "{mode:?}: the calls ended before the heal ({elapsed:?})"
    );

    let stats = rig.idem.stats();
    let (rows, distinct) = rig.orders.rows().await;
    assert_eq!((rows, distinct), (50, 50), "{mode:?}: one row per key");
    // Every call counted once, under the outcome its caller was told.
    assert_eq!(stats.calls(), (TASKS * ROUNDS) as u64);
    for o in CallOutcome::ALL {
        let told = seen.iter().filter(|s| s.outcome == o).count() as u64;
        assert_eq!(stats.count(o.as_str()), told, "{mode:?} {o}");
    }
    let degraded_hits = seen
        .iter()
        .filter(|s| s.outcome == CallOutcome::Degraded && s.hit)
        .count() as u64;
    assert_eq!(stats.degraded_backstop_hits, degraded_hits, "{mode:?}");
    assert_eq!(
        stats.backstop_hits(),
        stats.count("backstop") + degraded_hits,
        "{mode:?}"
    );
    assert!(
        stats.count("degraded") > 0,
        "{mode:?}: the hole degraded calls"
    );
    let runs = rig.orders.runs();
    let runs_per_key: Vec<u32> = (0..50).map(|k| runs[&format!("o{k}")]).collect();
    let total: u64 = runs_per_key.iter().map(|r| u64::from(*r)).sum();
    assert_eq!(
        total,
        ["executed", "not_stored", "degraded", "backstop"]
            .iter()
            .map(|o| stats.count(o))
            .sum::<u64>(),
        "{mode:?}: every body run is a call that says so"
    );
    let after_heal: Vec<&Seen> = seen.iter().filter(|s| s.started >= healed).collect();
    let first_stored = after_heal
        .iter()
        .filter(|s| s.stored)
        .map(|s| s.started)
        .min()
        .expect("a call after the heal used the store");
    Run {
        runs_per_key,
        degraded_after_heal: after_heal
            .iter()
            .filter(|s| s.outcome == CallOutcome::Degraded)
            .count(),
        heal_to_first_stored: first_stored - healed,
        stats,
    }
}

fn summary(mode: Mode, r: &Run) {
    let total: u32 = r.runs_per_key.iter().sum();
    let max = r.runs_per_key.iter().max().unwrap();
    let s = &r.stats;
    println!(
        "{mode:?}: body runs {total} for 50 keys ({:.2}/key, max {max}); executed {} replayed {} \
         waited {} degraded {} (of which constraint hits {}) backstop {} not_stored {}; \
         backstop hits {}; interception {:.3}; heal -> first stored call {:?}; \
         degraded calls started after heal {}",
        f64::from(total) / 50.0,
        s.count("executed"),
        s.count("replayed"),
        s.count("waited"),
        s.count("degraded"),
        s.degraded_backstop_hits,
        s.count("backstop"),
        s.count("not_stored"),
        s.backstop_hits(),
        s.interception_rate(),
        r.heal_to_first_stored,
        r.degraded_after_heal,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn black_hole_burst_with_and_without_the_local_claim() {
    let plain = burst(Mode::Backstop).await;
    summary(Mode::Backstop, &plain);
    let local = burst(Mode::Local).await;
    summary(Mode::Local, &local);
    for (mode, r) in [(Mode::Backstop, &plain), (Mode::Local, &local)] {
        assert!(
            r.heal_to_first_stored < COOLDOWN + Duration::from_millis(1_500),
            "{mode:?}: the breaker outlived the outage: {:?}",
            r.heal_to_first_stored
        );
        assert!(
            r.runs_per_key.iter().all(|n| (1..=4).contains(n)),
            "{mode:?}"
        );
    }
    // Same-process duplicates wait for the one degraded body instead of running
    // into the constraint: at most one extra run per key (a round straddling the
    // probe: one body under the store's claim, one degraded).
    assert!(
        local.runs_per_key.iter().all(|n| *n <= 2),
        "{:?}",
        local.runs_per_key
    );
    assert!(
        local.stats.count("waited") > 0,
        "degraded duplicates waited"
    );
    let sum = |r: &Run| r.runs_per_key.iter().sum::<u32>();
    assert!(
        sum(&local) < sum(&plain),
        "{} vs {}",
        sum(&local),
        sum(&plain)
    );
}
