//! The state check-and-set (`idem.state_cas(..).apply(from, to, ttl)`) under
//! the guard's faults: lost and late replies, refusals, slow operations,
//! outages, `FLUSHALL`, callers dropped at any time, process crashes.
//!
//! The machine is `∅ → NEW → PAID → SHIPPED` with `NEW → CANCELLED`; callers
//! send its edges, repeats included, on one or two keys.
//!
//! | invariant | statement |
//! |---|---|
//! | `cas-applier-told` | a call whose own attempt applied its edge is never told `AlreadyApplied` or `InvalidTransition` (issue 24 f) |
//! | `cas-answer-backed` | `Applied` only if an attempt of that call applied; `AlreadyApplied` / `InvalidTransition { current }` only as an attempt of that call found it |
//! | `cas-once` | between losses of the store's data, each state is entered at most once per key (the machine is acyclic) |
//! | `bounded` | no call outlives its operation budget (2 × op timeout + retry pauses) |
//! | `progress` | after healing, every process reads every key's state |

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use idem::{Idem, StateCas};
use tokio::task::JoinSet;

use super::SeedRun;
use super::faults::{Applied, CALL, Mix, ProcTech, Shared, What};
use crate::sim::rng::Rng;

mod check;
pub(crate) use check::{check, dump};

pub(crate) const EDGES: [(Option<&str>, &str); 4] = [
    (None, "NEW"),
    (Some("NEW"), "PAID"),
    (Some("PAID"), "SHIPPED"),
    (Some("NEW"), "CANCELLED"),
];

#[derive(Debug, Clone)]
pub(crate) struct CasCall {
    pub(crate) id: usize,
    pub(crate) proc: usize,
    pub(crate) key: usize,
    pub(crate) at: Duration,
    pub(crate) edge: usize,
    pub(crate) cancel_after: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CasEvent {
    Outage(Duration),
    FlushAll,
    Crash(usize),
}

#[derive(Debug, Clone)]
pub(crate) struct CasSchedule {
    pub(crate) seed: u64,
    pub(crate) procs: usize,
    pub(crate) keys: usize,
    pub(crate) op_timeout: Duration,
    pub(crate) mix: Option<Mix>,
    /// The first this many operations apply and lose their reply.
    pub(crate) lose_first: u64,
    pub(crate) events: Vec<(Duration, CasEvent)>,
    pub(crate) calls: Vec<CasCall>,
}

impl CasSchedule {
    pub(crate) fn generate(seed: u64) -> CasSchedule {
        let mut r = Rng::new(seed);
        let procs = r.range(1, 3) as usize;
        let keys = r.range(1, 2) as usize;
        let op_timeout = r.ms(100, 800);
        let mix = r.chance(70).then(|| Mix::draw(&mut r));
        let lose_first = if r.chance(20) { r.range(1, 2) } else { 0 };
        let mut at = Duration::ZERO;
        let calls = (0..r.range(2, 8) as usize)
            .map(|id| {
                at += if r.chance(40) {
                    Duration::ZERO
                } else {
                    r.ms(0, 1500)
                };
                CasCall {
                    id,
                    proc: r.range(0, procs as u64 - 1) as usize,
                    key: r.range(0, keys as u64 - 1) as usize,
                    at,
                    // Mostly the next edge of the happy path, often a repeat.
                    edge: match r.range(0, 9) {
                        0..=3 => id.min(2) % 4,
                        4..=6 => (id.saturating_sub(1)).min(2),
                        _ => r.range(0, 3) as usize,
                    },
                    cancel_after: r.chance(15).then(|| r.ms(0, 1200)),
                }
            })
            .collect();
        let events = (0..if r.chance(60) { 0 } else { r.range(1, 2) })
            .map(|_| {
                let t = r.ms(0, 6000);
                let e = match r.range(0, 2) {
                    0 => CasEvent::Outage(r.ms(50, 2000)),
                    1 => CasEvent::FlushAll,
                    _ => CasEvent::Crash(r.range(0, procs as u64 - 1) as usize),
                };
                (t, e)
            })
            .collect();
        CasSchedule {
            seed,
            procs,
            keys,
            op_timeout,
            mix,
            lose_first,
            events,
            calls,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CasResult {
    Ok(StateCas),
    Err(String),
    Cancelled,
}

#[derive(Debug)]
pub(crate) struct CasOutput {
    /// Per call: (start, end, result); `None` when its process crashed first.
    pub(crate) ends: Vec<Option<(Duration, Duration, CasResult)>>,
    pub(crate) log: Vec<Applied>,
    pub(crate) keys: Vec<String>,
    pub(crate) flushes: Vec<Duration>,
    pub(crate) probes_ok: Vec<String>,
    pub(crate) faults: super::faults::Counts,
}

fn handle(p: &Arc<ProcTech>, op_timeout: Duration, jitter: u64) -> Idem {
    let idem = Idem::builder()
        .shared_store(p.clone())
        .namespace("simcas")
        .op_timeout(op_timeout)
        .build()
        .expect("a valid handle");
    idem.__seed_jitter(jitter);
    idem
}

pub(crate) fn run(s: &CasSchedule) -> CasOutput {
    super::paused().block_on(execute(s))
}

async fn execute(s: &CasSchedule) -> CasOutput {
    let shared = Shared::new(s.seed);
    shared.set_mix(s.mix);
    shared.lose_next_replies(s.lose_first);
    let mut started = 0..;
    let mut jitter = || super::jitter_seed(s.seed, started.next().unwrap_or(0));
    let mut procs: Vec<_> = (0..s.procs)
        .map(|_| {
            let (p, cut) = ProcTech::new(&shared);
            (handle(&p, s.op_timeout, jitter()), cut, JoinSet::new())
        })
        .collect();
    let keys: Vec<String> = (0..s.keys)
        .map(|k| procs[0].0.key("state:sim", &[&k]).as_str().to_owned())
        .collect();
    let ends = Arc::new(std::sync::Mutex::new(vec![None; s.calls.len()]));
    let mut steps: Vec<(Duration, Option<usize>, Option<CasEvent>)> = s
        .calls
        .iter()
        .map(|c| (c.at, Some(c.id), None))
        .chain(s.events.iter().map(|(t, e)| (*t, None, Some(*e))))
        .collect();
    steps.sort_by_key(|x| x.0);
    let epoch = tokio::time::Instant::now();
    let mut flushes = Vec::new();
    let mut dead = Vec::new();
    for (t, call, ev) in steps {
        tokio::time::sleep_until(epoch + t).await;
        if let Some(id) = call {
            let c = s.calls[id].clone();
            let idem = procs[c.proc].0.clone();
            let ends = Arc::clone(&ends);
            procs[c.proc].2.spawn(CALL.scope(id, async move {
                let (from, to) = EDGES[c.edge];
                let t0 = epoch.elapsed();
                let cas = idem.state_cas("state:sim", &[&c.key]);
                let fut = cas.apply(from, to, Duration::from_secs(3600));
                let res = match c.cancel_after {
                    Some(d) => match tokio::time::timeout(d, fut).await {
                        Ok(r) => r,
                        Err(_) => {
                            ends.lock().unwrap()[id] =
                                Some((t0, epoch.elapsed(), CasResult::Cancelled));
                            return;
                        }
                    },
                    None => fut.await,
                };
                let res = match res {
                    Ok(v) => CasResult::Ok(v),
                    Err(e) => CasResult::Err(e.to_string()),
                };
                ends.lock().unwrap()[id] = Some((t0, epoch.elapsed(), res));
            }));
        }
        match ev {
            Some(CasEvent::Outage(d)) => {
                shared.set_down(true);
                let sh = Arc::clone(&shared);
                tokio::spawn(async move {
                    tokio::time::sleep(d).await;
                    sh.set_down(false);
                });
            }
            Some(CasEvent::FlushAll) => {
                shared.flushall();
                flushes.push(epoch.elapsed());
            }
            Some(CasEvent::Crash(p)) => {
                let (np, cut) = ProcTech::new(&shared);
                let old = std::mem::replace(
                    &mut procs[p],
                    (handle(&np, s.op_timeout, jitter()), cut, JoinSet::new()),
                );
                old.1.store(true, Ordering::SeqCst);
                let mut tasks = old.2;
                tasks.abort_all();
                dead.push(tasks);
            }
            None => {}
        }
    }
    for p in procs.iter_mut() {
        while p.2.join_next().await.is_some() {}
    }
    for mut d in dead {
        while d.join_next().await.is_some() {}
    }
    shared.set_mix(None);
    shared.set_down(false);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut probes_ok = Vec::new();
    for (i, p) in procs.iter().enumerate() {
        for k in 0..s.keys {
            match p.0.state_cas("state:sim", &[&k]).current().await {
                Ok(_) => {}
                Err(e) => probes_ok.push(format!("process {i} key {k}: {e}")),
            }
        }
    }
    let ends = ends.lock().unwrap().clone();
    CasOutput {
        ends,
        log: shared.log(),
        keys,
        flushes,
        probes_ok,
        faults: shared.counts(),
    }
}

fn seed_run(seed: u64, verbose: bool) -> SeedRun {
    let s = CasSchedule::generate(seed);
    let out = run(&s);
    let verdict = check(&s, &out);
    let outcomes = out
        .ends
        .iter()
        .flatten()
        .map(|e| match &e.2 {
            CasResult::Ok(StateCas::InvalidTransition { .. }) => "InvalidTransition".into(),
            CasResult::Ok(r) => format!("{r:?}"),
            CasResult::Err(_) => "Err".into(),
            CasResult::Cancelled => "Cancelled".into(),
        })
        .chain((out.faults.lost_replies > 0).then(|| "lost-reply".to_owned()))
        .chain((out.faults.refused > 0).then(|| "refused".to_owned()))
        .chain((out.faults.late > 0).then(|| "late-reply".to_owned()))
        .collect();
    let dump = (verbose || verdict.is_err()).then(|| dump(&s, &out));
    SeedRun {
        verdict,
        dump,
        outcomes,
    }
}

#[test]
fn sim_state_cas_seeded_schedules() {
    super::sweep(
        "cas",
        seed_run,
        &[
            "Applied",
            "AlreadyApplied",
            "InvalidTransition",
            "Err",
            "Cancelled",
            "lost-reply",
            "refused",
            "late-reply",
        ],
    );
}
