//! One-time tokens (`idem.tokens().consume(scope, token).run(body)`) under the
//! guard's faults: lost and late replies, refusals, slow operations, outages,
//! `FLUSHALL`, callers dropped at any time (in the body, in the give-back),
//! process crashes; bodies that succeed, fail (the token is given back) or
//! run long. After healing, every process submits every token again.
//!
//! | invariant | statement |
//! |---|---|
//! | `token-once` | a token's bodies run one after another, and each starts only after the one before ended with an error (its give-back): a body that succeeded, or whose caller was dropped or whose process crashed while it ran, is the token's last, whatever the faults |
//! | `fail-closed` | `TokenInvalid`, `InProgress` and `StoreUnavailable` never ran the body |
//! | `body-result` | a caller that was not dropped gets its own body's result |
//! | `give-back` | after healing, a token is accepted by the first probe unless a body consumed it, a `FLUSHALL` lost it, a holder was lost with it (a process that crashed after the call started, taking a pending undo or give-back with it, or a caller dropped once its body started: the token stays spent), or the store refused operations for longer than a blip (a give-back nobody waits for stops at an open breaker) |
//! | `progress` | after healing, no probe ends `InProgress` or `StoreUnavailable` |

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idem::Idem;
use tokio::task::JoinSet;

use super::faults::{Applied, CALL, Mix, ProcTech, Shared};
use crate::sim::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TBody {
    Ok,
    Fail,
    /// Runs past the lease (which a spent token no longer holds).
    Hang,
}

#[derive(Debug, Clone)]
pub(crate) struct TokCall {
    pub(crate) id: usize,
    pub(crate) proc: usize,
    pub(crate) token: usize,
    pub(crate) at: Duration,
    pub(crate) body: TBody,
    pub(crate) body_time: Duration,
    pub(crate) cancel_after: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokEvent {
    Outage(Duration),
    FlushAll,
    Crash(usize),
}

#[derive(Debug, Clone)]
pub(crate) struct TokSchedule {
    pub(crate) seed: u64,
    pub(crate) procs: usize,
    pub(crate) tokens: usize,
    pub(crate) lease: Duration,
    pub(crate) op_timeout: Duration,
    pub(crate) mix: Option<Mix>,
    pub(crate) events: Vec<(Duration, TokEvent)>,
    pub(crate) calls: Vec<TokCall>,
}

impl TokSchedule {
    pub(crate) fn generate(seed: u64) -> TokSchedule {
        let mut r = Rng::new(seed);
        let procs = r.range(1, 3) as usize;
        let tokens = r.range(1, 2) as usize;
        let lease = r.ms(1000, 3000);
        let lease_ms = lease.as_millis() as u64;
        let op_timeout = r.ms(100, 800);
        // A wait and a `max_hold`, drawn and unused: a spent token is neither
        // waited for nor renewed, and every seed keeps the schedule it had.
        let _wait = r.ms(0, 4000);
        let _max_hold = r.chance(30).then(|| lease + r.ms(1, 2 * lease_ms));
        let mix = r.chance(50).then(|| Mix::draw(&mut r));
        let mut at = Duration::ZERO;
        let calls = (0..r.range(2, 7) as usize)
            .map(|id| {
                at = match r.range(0, 9) {
                    0..=3 => at,
                    _ => at + r.ms(0, 2000),
                };
                let body = match r.range(0, 9) {
                    0..=5 => TBody::Ok,
                    6 | 7 => TBody::Fail,
                    _ => TBody::Hang,
                };
                let body_time = match body {
                    TBody::Hang => r.ms(lease_ms + 1, 3 * lease_ms),
                    _ => r.ms(0, lease_ms / 2),
                };
                TokCall {
                    id,
                    proc: r.range(0, procs as u64 - 1) as usize,
                    token: r.range(0, tokens as u64 - 1) as usize,
                    at,
                    body,
                    body_time,
                    cancel_after: match r.range(0, 9) {
                        0 => Some(r.ms(0, 2 * lease_ms)),
                        // Just after the body: while the consume is in flight.
                        1 | 2 => Some(body_time + r.ms(0, 400)),
                        _ => None,
                    },
                }
            })
            .collect();
        let events = (0..if r.chance(60) { 0 } else { r.range(1, 2) })
            .map(|_| {
                let t = r.ms(0, 6000);
                let e = match r.range(0, 3) {
                    0 => TokEvent::Outage(r.ms(50, 2000)),
                    1 => TokEvent::FlushAll,
                    _ => TokEvent::Crash(r.range(0, procs as u64 - 1) as usize),
                };
                (t, e)
            })
            .collect();
        TokSchedule {
            seed,
            procs,
            tokens,
            lease,
            op_timeout,
            mix,
            events,
            calls,
        }
    }

    /// The store refuses operations for longer than a blip: a give-back that
    /// nobody waits for may give up (it stops when the breaker opens).
    pub(crate) fn refusing(&self) -> bool {
        self.mix.is_some_and(|m| m.unavailable > 0)
            || self
                .events
                .iter()
                .any(|(_, e)| matches!(e, TokEvent::Outage(d) if *d >= self.lease / 3))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokResult {
    Executed(u64),
    Failed,
    Invalid,
    InProgress,
    Unavailable,
    Other(String),
    Cancelled,
}

#[derive(Debug, Default, Clone)]
pub(crate) struct TokCallInfo {
    pub(crate) body: Option<(Duration, Option<Duration>, bool)>,
    /// How many bodies had started before this one: bodies that start at one
    /// virtual instant are ordered by it, not by their call's index.
    pub(crate) started: usize,
    pub(crate) end: Option<(Duration, TokResult)>,
    pub(crate) crashed: bool,
}

#[derive(Debug)]
pub(crate) struct TokOutput {
    /// The schedule's calls, then the probes (token index in `probe_tokens`).
    pub(crate) calls: Vec<TokCallInfo>,
    pub(crate) probe_tokens: Vec<usize>,
    pub(crate) log: Vec<Applied>,
    pub(crate) flushed: bool,
}

#[derive(Debug)]
enum TErr {
    Idem(idem::Error),
    Fail,
}

impl From<idem::Error> for TErr {
    fn from(e: idem::Error) -> Self {
        TErr::Idem(e)
    }
}

type Info = Arc<Mutex<Vec<TokCallInfo>>>;

fn handle(p: &Arc<ProcTech>, op_timeout: Duration, jitter: u64) -> Idem {
    let idem = Idem::builder()
        .shared_store(p.clone())
        .namespace("simtok")
        .op_timeout(op_timeout)
        .build()
        .expect("a valid handle");
    idem.__seed_jitter(jitter);
    idem
}

#[allow(clippy::too_many_arguments)]
async fn submit(
    idem: Idem,
    s: TokSchedule,
    id: usize,
    token: String,
    body: TBody,
    body_time: Duration,
    cancel_after: Option<Duration>,
    info: Info,
    epoch: tokio::time::Instant,
) {
    let i2 = Arc::clone(&info);
    let c = idem.tokens().consume("token:sim", &token).lease(s.lease);
    let fut = c.run(move |_fence| async move {
        {
            let mut inf = i2.lock().unwrap();
            inf[id].started = inf.iter().filter(|c| c.body.is_some()).count();
            inf[id].body = Some((epoch.elapsed(), None, false));
        }
        tokio::time::sleep(body_time).await;
        let ok = body != TBody::Fail;
        if let Some(b) = i2.lock().unwrap()[id].body.as_mut() {
            *b = (b.0, Some(epoch.elapsed()), ok);
        }
        if ok {
            Ok(1000 + id as u64)
        } else {
            Err(TErr::Fail)
        }
    });
    let res = match cancel_after {
        Some(d) => tokio::time::timeout(d, fut).await.ok(),
        None => Some(fut.await),
    };
    let res = match res {
        None => TokResult::Cancelled,
        Some(Ok(v)) => TokResult::Executed(v),
        Some(Err(TErr::Fail)) => TokResult::Failed,
        Some(Err(TErr::Idem(e))) => match e {
            idem::Error::TokenInvalid { .. } => TokResult::Invalid,
            idem::Error::InProgress { .. } => TokResult::InProgress,
            idem::Error::StoreUnavailable { .. } => TokResult::Unavailable,
            e => TokResult::Other(e.to_string()),
        },
    };
    info.lock().unwrap()[id].end = Some((epoch.elapsed(), res));
}

pub(crate) fn run(s: &TokSchedule) -> TokOutput {
    super::paused().block_on(execute(s))
}

async fn execute(s: &TokSchedule) -> TokOutput {
    let shared = Shared::new(s.seed);
    let mut started = 0..;
    let mut jitter = || super::jitter_seed(s.seed, started.next().unwrap_or(0));
    let mut procs: Vec<_> = (0..s.procs)
        .map(|_| {
            let (p, cut) = ProcTech::new(&shared);
            (
                handle(&p, s.op_timeout, jitter()),
                cut,
                JoinSet::new(),
                Vec::new(),
            )
        })
        .collect();
    let mut tokens = Vec::new();
    for _ in 0..s.tokens {
        let idem = procs[0].0.clone();
        let t = idem
            .tokens()
            .issue("token:sim", Duration::from_secs(3600))
            .await;
        tokens.push(t.expect("issue without faults").into_string());
    }
    shared.set_mix(s.mix);
    let nprobes = s.procs * s.tokens;
    let info: Info = Arc::new(Mutex::new(vec![
        TokCallInfo::default();
        s.calls.len() + nprobes
    ]));
    let mut steps: Vec<(Duration, Option<usize>, Option<TokEvent>)> = s
        .calls
        .iter()
        .map(|c| (c.at, Some(c.id), None))
        .chain(s.events.iter().map(|(t, e)| (*t, None, Some(*e))))
        .collect();
    steps.sort_by_key(|x| x.0);
    let epoch = tokio::time::Instant::now();
    let mut dead = Vec::new();
    let mut flushed = false;
    for (t, call, ev) in steps {
        tokio::time::sleep_until(epoch + t).await;
        if let Some(id) = call {
            let c = s.calls[id].clone();
            let p = &mut procs[c.proc];
            p.3.push(id);
            let fut = submit(
                p.0.clone(),
                s.clone(),
                id,
                tokens[c.token].clone(),
                c.body,
                c.body_time,
                c.cancel_after,
                Arc::clone(&info),
                epoch,
            );
            p.2.spawn(CALL.scope(id, fut));
        }
        match ev {
            Some(TokEvent::Outage(d)) => {
                shared.set_down(true);
                let sh = Arc::clone(&shared);
                tokio::spawn(async move {
                    tokio::time::sleep(d).await;
                    sh.set_down(false);
                });
            }
            Some(TokEvent::FlushAll) => {
                shared.flushall();
                flushed = true;
            }
            Some(TokEvent::Crash(p)) => {
                let (np, cut) = ProcTech::new(&shared);
                let fresh = (
                    handle(&np, s.op_timeout, jitter()),
                    cut,
                    JoinSet::new(),
                    Vec::new(),
                );
                let old = std::mem::replace(&mut procs[p], fresh);
                old.1.store(true, Ordering::SeqCst);
                let mut tasks = old.2;
                tasks.abort_all();
                {
                    let mut inf = info.lock().unwrap();
                    for id in old.3 {
                        if inf[id].end.is_none() {
                            inf[id].crashed = true;
                        }
                    }
                }
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
    tokio::time::sleep(s.lease + 2 * s.op_timeout + Duration::from_secs(1)).await;
    let mut probe_tokens = Vec::new();
    let mut id = s.calls.len();
    #[allow(clippy::needless_range_loop)] // `t` is also the probe's token index
    for t in 0..s.tokens {
        for p in &procs {
            probe_tokens.push(t);
            let fut = submit(
                p.0.clone(),
                s.clone(),
                id,
                tokens[t].clone(),
                TBody::Ok,
                Duration::from_millis(10),
                None,
                Arc::clone(&info),
                epoch,
            );
            CALL.scope(id, fut).await;
            id += 1;
        }
    }
    let calls = info.lock().unwrap().clone();
    TokOutput {
        calls,
        probe_tokens,
        log: shared.log(),
        flushed,
    }
}
