//! Executes a [`Schedule`]: processes with their own `Idem` handle share one
//! faulty store; calls start at their virtual times; events hit the world.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use idem::store::memory::MemoryStore;
use idem::{FaultyStore, Fence, Hooks, Idem, Key, Store, Terminal};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::history::{BodyOut, CallResult, ErrKind, Ev, StoreEv, World};
use super::recording::{ProcStore, RecordingStore};
use super::schedule::{BodyKind, CallSpec, Event, KeySpec, Schedule};
use super::sim_error::{SimError, SimUnique, detect, is_rejection};

/// Everything a run leaves behind for the invariants.
#[derive(Debug)]
pub(crate) struct RunOutput {
    pub(crate) events: Vec<(Duration, Ev)>,
    pub(crate) store_log: Vec<StoreEv>,
    pub(crate) rows: std::collections::HashMap<usize, u64>,
    /// The rendered key of each key index.
    pub(crate) keys: Vec<String>,
    /// Every call made: the schedule's, then the probes made after the faults healed.
    pub(crate) calls: Vec<CallSpec>,
    /// Calls with this id or higher are probes.
    pub(crate) first_probe: usize,
    /// Set when the run did not finish within its virtual deadline.
    pub(crate) stuck: Option<String>,
    /// What the fault layer did.
    pub(crate) faults: idem::store::faulty::FaultCounts,
}

/// The value a call's body returns: unique per call.
pub(crate) fn value_of(call: usize) -> u64 {
    1000 + call as u64
}

/// Runs `s` on a fresh memory store under a paused (virtual) clock.
pub(crate) fn run_memory(s: &Schedule) -> RunOutput {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    rt.block_on(execute(s, Arc::new(MemoryStore::new()), "sim", 1))
}

struct Proc {
    idem: Idem,
    cut: Arc<AtomicBool>,
    tasks: JoinSet<()>,
}

fn start_proc(
    s: &Schedule,
    shared: &Arc<dyn Store>,
    ns: &str,
    incarnation: u64,
    healed: &Arc<AtomicBool>,
) -> Proc {
    let cut = Arc::new(AtomicBool::new(false));
    let store = ProcStore::new(
        Arc::clone(shared),
        Arc::clone(&cut),
        s.reply_delay,
        s.seed ^ incarnation.wrapping_mul(0x9E37_79B9),
        Arc::clone(healed),
    );
    let idem = Idem::builder()
        .shared_store(Arc::new(store))
        .namespace(ns)
        .op_timeout(s.op_timeout)
        .circuit_breaker(s.breaker.0, s.breaker.1)
        .build()
        .expect("valid handle");
    idem.__seed_jitter(super::tech::jitter_seed(s.seed, incarnation));
    Proc {
        idem,
        cut,
        tasks: JoinSet::new(),
    }
}

enum Step {
    Call(usize),
    Event(Event),
}

/// Before a real store's probe is tried again: waits (at most 30 s) until the
/// store keeps up again, a write answering within half the schedule's op timeout,
/// and `key` is not held. "Healed" means the injected faults stopped, but a store
/// shared by a hundred schedules on a loaded machine can stay slower than the op
/// timeout well after that (SQLite's single writer at load 15: issue 18), and
/// every probe that times out leaves a claim that applies late and holds the key
/// until its release, queued behind it, lands. Read directly from the store, so
/// the store log the invariants check is untouched.
async fn settle(store: &Arc<dyn Store>, key: &str, op_timeout: Duration) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let throwaway = format!("{key}:settle");
    while tokio::time::Instant::now() < deadline {
        let t0 = tokio::time::Instant::now();
        let write = store.forget(&throwaway).await;
        let keeps_up = write.is_ok() && t0.elapsed() < op_timeout / 2;
        let held = matches!(
            store.inspect(key).await,
            Ok(Some(idem::store::RecordState::InProgress { .. })) | Err(_)
        );
        if keeps_up && !held {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs a schedule against `base` (already empty for the keys of namespace `ns`).
/// Each probe after healing gets up to `probe_attempts` tries (1 in virtual time,
/// where nothing is slow; more on a real store, which may be loaded).
pub(crate) async fn execute(
    s: &Schedule,
    base: Arc<dyn Store>,
    ns: &str,
    probe_attempts: u32,
) -> RunOutput {
    let world = World::new();
    let unlogged = Arc::clone(&base);
    let recording: Arc<dyn Store> = Arc::new(RecordingStore::new(base, Arc::clone(&world)));
    let faulty = Arc::new(FaultyStore::new(Arc::clone(&recording)));
    faulty.set_plan(s.plan);
    let shared: Arc<dyn Store> = faulty.clone();
    let healed = Arc::new(AtomicBool::new(false));
    let mut incarnation = 0;
    let mut procs: Vec<Proc> = (0..s.procs)
        .map(|_| {
            incarnation += 1;
            start_proc(s, &shared, ns, incarnation, &healed)
        })
        .collect();
    let mut dead: Vec<JoinSet<()>> = Vec::new();
    let keys: Vec<Key> = (0..s.keys.len())
        .map(|k| procs[0].idem.key("sim", &[&k]))
        .collect();

    let mut steps: Vec<(Duration, Step)> = s
        .events
        .iter()
        .map(|(t, e)| (*t, Step::Event(*e)))
        .chain(s.calls.iter().map(|c| (c.at, Step::Call(c.id))))
        .collect();
    steps.sort_by_key(|(t, _)| *t);

    let epoch = world.epoch();
    let limit = Duration::from_secs(3600);
    let mut stuck = None;
    let main = async {
        for (t, step) in steps {
            tokio::time::sleep_until(epoch + t).await;
            match step {
                Step::Call(id) => {
                    let c = s.calls[id].clone();
                    let p = &mut procs[c.proc];
                    let spec = s.keys[c.key].clone();
                    // Recorded before the task first runs: a crash may abort it
                    // before that, and it must still count as crashed.
                    world.call_started(c.proc, c.id);
                    let fut = call(
                        Arc::clone(&world),
                        p.idem.clone(),
                        spec,
                        keys[c.key].clone(),
                        c,
                    );
                    p.tasks.spawn(async move {
                        fut.await;
                    });
                }
                Step::Event(Event::Outage(d)) => {
                    faulty.set_unavailable(true);
                    let f = Arc::clone(&faulty);
                    tokio::spawn(async move {
                        tokio::time::sleep(d).await;
                        f.set_unavailable(false);
                    });
                }
                Step::Event(Event::LoseKeys) => {
                    let _ = faulty.lose_all_keys().await;
                }
                Step::Event(Event::Purge) => {
                    let _ = recording.purge_expired().await;
                }
                Step::Event(Event::Forget(k)) => {
                    let _ = recording.forget(keys[k].as_str()).await;
                }
                Step::Event(Event::Crash(p)) => {
                    incarnation += 1;
                    let old = std::mem::replace(
                        &mut procs[p],
                        start_proc(s, &shared, ns, incarnation, &healed),
                    );
                    old.cut.store(true, Ordering::SeqCst);
                    let mut tasks = old.tasks;
                    tasks.abort_all();
                    world.crash(p);
                    dead.push(tasks);
                }
            }
        }
        for p in procs.iter_mut() {
            while p.tasks.join_next().await.is_some() {}
        }
        for mut d in dead {
            while d.join_next().await.is_some() {}
        }

        // Heal, let every lease and the breakers run out, then every process must
        // make progress on every key.
        faulty.set_plan(None);
        faulty.set_unavailable(false);
        healed.store(true, Ordering::SeqCst);
        let max_lease = s
            .keys
            .iter()
            .map(|k| k.policy.lease)
            .max()
            .unwrap_or_default();
        tokio::time::sleep(max_lease + s.breaker.1 + 2 * s.op_timeout + Duration::from_secs(1))
            .await;
        let mut probes = Vec::new();
        let mut id = s.calls.len();
        for (p, proc_) in procs.iter().enumerate() {
            for (k, key) in keys.iter().enumerate() {
                for attempt in 1..=probe_attempts {
                    let c = CallSpec {
                        id,
                        proc: p,
                        key: k,
                        at: world.now(),
                        payload: 0,
                        body: BodyKind::Ok,
                        body_time: Duration::from_millis(10),
                        cancel_after: None,
                    };
                    probes.push(c.clone());
                    id += 1;
                    let spec = s.keys[k].clone();
                    world.call_started(p, c.id);
                    let r =
                        call(Arc::clone(&world), proc_.idem.clone(), spec, key.clone(), c).await;
                    // On a loaded real store a probe may time out, and its claim may
                    // still apply and hold the key for a lease: try again after it.
                    let busy = matches!(
                        r,
                        CallResult::Err(ErrKind::StoreUnavailable | ErrKind::InProgress)
                    );
                    if !busy || attempt == probe_attempts {
                        break;
                    }
                    tokio::time::sleep(s.keys[k].policy.lease + s.breaker.1).await;
                    settle(&unlogged, key.as_str(), s.op_timeout).await;
                }
            }
        }
        probes
    };
    let probes = match tokio::time::timeout(limit, main).await {
        Ok(p) => p,
        Err(_) => {
            stuck = Some(format!(
                "run did not finish within {limit:?} of virtual time"
            ));
            Vec::new()
        }
    };
    RunOutput {
        events: world.events(),
        store_log: world.store_log(),
        rows: world.rows(),
        keys: keys.iter().map(|k| k.as_str().to_owned()).collect(),
        calls: s.calls.iter().cloned().chain(probes).collect(),
        first_probe: s.calls.len(),
        faults: faulty.counts(),
        stuck,
    }
}

/// One guarded call, possibly cancelled by its caller.
async fn call(world: Arc<World>, idem: Idem, spec: KeySpec, key: Key, c: CallSpec) -> CallResult {
    let t0 = Instant::now();
    let guard = idem
        .guard_key(key)
        .policy(spec.policy.clone())
        .fingerprint(&c.payload);
    let w = Arc::clone(&world);
    let backstop = spec.backstop();
    let c2 = c.clone();
    let body = move |fence: Fence| body(w, c2, backstop, fence);
    let fut = async {
        let mut hooks = Hooks::new().detect(detect);
        if spec.terminal {
            hooks = hooks.terminal(Terminal::new(is_rejection));
        }
        if spec.on_conflict {
            let w = Arc::clone(&world);
            let k = c.key;
            let hooks = hooks.on_conflict(move || async move { w.row(k).ok_or(SimError::NoRow) });
            guard.run_fenced_with(hooks, body).await
        } else {
            guard.run_fenced_with(hooks, body).await
        }
    };
    let result = match c.cancel_after {
        Some(d) => match tokio::time::timeout(d, fut).await {
            Ok(r) => result_of(r),
            Err(_) => CallResult::Cancelled,
        },
        None => result_of(fut.await),
    };
    world.call_ended(c.proc, c.id, result.clone(), t0.elapsed());
    result
}

fn result_of(r: Result<idem::Outcome<u64>, SimError>) -> CallResult {
    match r {
        Ok(o) => CallResult::Ok {
            how: o.how(),
            fence: o.fence().get(),
            value: o.into_inner(),
        },
        Err(e) => CallResult::Err(match e {
            SimError::Transient => ErrKind::Transient,
            SimError::Unique(_) => ErrKind::Unique,
            SimError::NoRow => ErrKind::NoRow,
            SimError::Rejected(v) => ErrKind::Rejected(v),
            SimError::Idem(idem::Error::InProgress { .. }) => ErrKind::InProgress,
            SimError::Idem(idem::Error::PayloadMismatch { .. }) => ErrKind::Mismatch,
            SimError::Idem(idem::Error::Duplicate { .. }) => ErrKind::Duplicate,
            SimError::Idem(idem::Error::StoreUnavailable { .. }) => ErrKind::StoreUnavailable,
            SimError::Idem(other) => ErrKind::Other(other.to_string()),
        }),
    }
}

/// The simulated business body: first effect is the constrained insert (with a
/// backstop), then the work, then the fenced write.
async fn body(w: Arc<World>, c: CallSpec, backstop: bool, fence: Fence) -> Result<u64, SimError> {
    let call = c.id;
    w.ev(Ev::BodyStart {
        call,
        fence: fence.get(),
    });
    let value = value_of(call);
    match c.body {
        BodyKind::Fail => {
            tokio::time::sleep(c.body_time).await;
            w.ev(Ev::BodyEnd {
                call,
                out: BodyOut::Fail,
            });
            return Err(SimError::Transient);
        }
        BodyKind::Reject => {
            tokio::time::sleep(c.body_time).await;
            w.ev(Ev::BodyEnd {
                call,
                out: BodyOut::Rejected,
            });
            return Err(SimError::Rejected(value));
        }
        BodyKind::Ok | BodyKind::Hang => {}
    }
    if backstop {
        let ok = w.insert(c.key, value);
        w.ev(Ev::Insert { call, ok });
        if !ok {
            w.ev(Ev::BodyEnd {
                call,
                out: BodyOut::Unique,
            });
            return Err(SimError::Unique(sqlx::Error::Database(Box::new(SimUnique))));
        }
    }
    tokio::time::sleep(c.body_time).await;
    let accepted = w.fenced_write(c.key, fence.get());
    w.ev(Ev::FencedWrite {
        call,
        fence: fence.get(),
        accepted,
    });
    w.ev(Ev::BodyEnd {
        call,
        out: BodyOut::Ok,
    });
    Ok(value)
}
