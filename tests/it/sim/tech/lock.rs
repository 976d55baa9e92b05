//! The distributed lock (`idem.lock_key(key)…run(body)`) on the guard's own
//! store chain (`ProcStore` → `FaultyStore` → `RecordingStore` → memory, see
//! `sim/recording.rs`) with the guard's faults, and a body that writes a
//! modelled row with the fenced SQL write: the statement `FencedUpdate`
//! renders is executed by a one-row model that reads the fence literals out
//! of it (`SET …, "fence" = F WHERE (…) AND "fence" <= F`).
//!
//! | invariant | statement |
//! |---|---|
//! | `lock-fence-monotonic` | the grants of a key carry strictly increasing fences, across expiry, `forget` and lost keys |
//! | `lock-fenced-sql` | the rendered statement carries the grant's fence in both places |
//! | `lock-fenced-register` | a fenced write is accepted iff its fence is ≥ every accepted one: a holder whose grant was superseded never overwrites its successor |
//! | `lock-exclusive` | (lease-safe runs) two live bodies of one key never overlap, unless the second entered after the first's renewals could stop (`max_hold` less a lease) |
//! | `lock-valid` | (no lost keys) a holder is never told `is_valid()` once a later grant of its key was made |
//! | `lock-busy-bounded` | `LockBusy` only after the whole wait |
//! | `lock-progress` | after healing and a lease, every process takes every lock: no key stays blocked past its lease after its holder is gone |

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idem::db::Dialect;
use idem::lock::{FencedUpdate, FencedWrite};
use idem::{FaultPlan, FaultyStore, Idem, Store};
use tokio::task::JoinSet;

use super::fenced_row::Rows;
use crate::sim::history::{StoreOp, World};
use crate::sim::recording::{ProcStore, RecordingStore};
use crate::sim::rng::Rng;
use idem::store::Claim;

#[derive(Debug, Clone)]
pub(crate) struct LockCall {
    pub(crate) id: usize,
    pub(crate) proc: usize,
    pub(crate) key: usize,
    pub(crate) at: Duration,
    pub(crate) body_time: Duration,
    pub(crate) cancel_after: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockEvent {
    Outage(Duration),
    LoseKeys,
    Forget(usize),
    Crash(usize),
}

#[derive(Debug, Clone)]
pub(crate) struct LockSchedule {
    pub(crate) seed: u64,
    pub(crate) procs: usize,
    pub(crate) keys: usize,
    pub(crate) lease: Duration,
    pub(crate) wait: Duration,
    pub(crate) max_hold: Option<Duration>,
    pub(crate) op_timeout: Duration,
    pub(crate) plan: Option<FaultPlan>,
    pub(crate) reply_delay: Option<(u64, Duration)>,
    pub(crate) events: Vec<(Duration, LockEvent)>,
    pub(crate) calls: Vec<LockCall>,
}

impl LockSchedule {
    pub(crate) fn generate(seed: u64) -> LockSchedule {
        let mut r = Rng::new(seed);
        let procs = r.range(1, 3) as usize;
        let keys = r.range(1, 2) as usize;
        let op_timeout = r.ms(100, 600);
        let lease = r.ms(1000, 3000).max(op_timeout * 3);
        let lease_ms = lease.as_millis() as u64;
        let mut at = Duration::ZERO;
        let calls = (0..r.range(2, 7) as usize)
            .map(|id| {
                at = if r.chance(40) { at } else { at + r.ms(0, 2000) };
                let body_time = if r.chance(15) {
                    r.ms(lease_ms + 1, 4 * lease_ms)
                } else {
                    r.ms(0, lease_ms / 2)
                };
                LockCall {
                    id,
                    proc: r.range(0, procs as u64 - 1) as usize,
                    key: r.range(0, keys as u64 - 1) as usize,
                    at,
                    body_time,
                    cancel_after: r.chance(15).then(|| r.ms(0, 2 * lease_ms)),
                }
            })
            .collect();
        let plan = r.chance(40).then(|| FaultPlan {
            seed: r.next_u64(),
            unavailable: r.range(0, 15) as f64 / 100.0,
            lost_reply: r.range(0, 15) as f64 / 100.0,
            lost_key: r.range(0, 5) as f64 / 100.0,
            slow: r.range(0, 20) as f64 / 100.0,
            delay: r.ms(1, 800),
        });
        let reply_delay = r.chance(25).then(|| (r.range(5, 40), r.ms(1, 800)));
        let events = (0..if r.chance(60) { 0 } else { r.range(1, 2) })
            .map(|_| {
                let t = r.ms(0, 6000);
                let e = match r.range(0, 3) {
                    0 => LockEvent::Outage(r.ms(50, 2000)),
                    1 => LockEvent::LoseKeys,
                    2 => LockEvent::Forget(r.range(0, keys as u64 - 1) as usize),
                    _ => LockEvent::Crash(r.range(0, procs as u64 - 1) as usize),
                };
                (t, e)
            })
            .collect();
        LockSchedule {
            seed,
            procs,
            keys,
            lease,
            wait: r.ms(0, 4000),
            max_hold: r.chance(30).then(|| lease + r.ms(1, 2 * lease_ms)),
            op_timeout,
            plan,
            reply_delay,
            events,
            calls,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub(crate) struct LockInfo {
    pub(crate) start: Duration,
    /// (time, fence) when the body started.
    pub(crate) body: Option<(Duration, u64)>,
    pub(crate) body_end: Option<Duration>,
    /// (time, fence, accepted, is_valid before writing).
    pub(crate) write: Option<(Duration, u64, bool, bool)>,
    pub(crate) end: Option<(Duration, Result<u64, String>)>,
    /// Dropped by its caller, or its process crashed, at this time.
    pub(crate) gone: Option<Duration>,
    pub(crate) busy: bool,
}

#[derive(Debug)]
pub(crate) struct LockOutput {
    pub(crate) calls: Vec<LockInfo>,
    pub(crate) probe_keys: Vec<usize>,
    pub(crate) sql_errors: Vec<String>,
    /// New claims as the store applied them, in order: (key index, fence).
    pub(crate) claims: Vec<(usize, u64)>,
}

type Infos = Arc<Mutex<Vec<LockInfo>>>;

struct Ctx {
    rows: Rows,
    upd: FencedUpdate,
    infos: Infos,
    sql_errors: Mutex<Vec<String>>,
    epoch: tokio::time::Instant,
}

async fn acquire(cx: Arc<Ctx>, idem: Idem, s: Arc<LockSchedule>, c: LockCall) {
    let id = c.id;
    let now = || cx.epoch.elapsed();
    cx.infos.lock().unwrap()[id].start = now();
    let key = idem.key("lock:sim", &[&c.key]);
    let mut lock = idem.lock_key(key).lease(s.lease).wait(s.wait);
    if let Some(m) = s.max_hold {
        lock = lock.max_hold(m);
    }
    let cx2 = Arc::clone(&cx);
    let fut = lock.run(move |grant| async move {
        let cx = cx2;
        let t = || cx.epoch.elapsed();
        cx.infos.lock().unwrap()[id].body = Some((t(), grant.fence().get()));
        tokio::time::sleep(c.body_time / 2).await;
        let valid = grant.is_valid();
        let sql = cx.upd.sql("qty = qty - $1", "sku = $2", grant.fence());
        let accepted = match cx.rows.execute(c.key, &sql) {
            Ok(n) => FencedWrite::from_rows(n).is_applied(),
            Err(e) => {
                cx.sql_errors.lock().unwrap().push(e);
                false
            }
        };
        cx.infos.lock().unwrap()[id].write = Some((t(), grant.fence().get(), accepted, valid));
        tokio::time::sleep(c.body_time - c.body_time / 2).await;
        cx.infos.lock().unwrap()[id].body_end = Some(t());
        Ok::<_, idem::Error>(1000 + id as u64)
    });
    let r = match c.cancel_after {
        Some(d) => tokio::time::timeout(d, fut).await.ok(),
        None => Some(fut.await),
    };
    let mut infos = cx.infos.lock().unwrap();
    match r {
        None => infos[id].gone = Some(now()),
        Some(r) => {
            infos[id].busy = matches!(r, Err(idem::Error::LockBusy { .. }));
            infos[id].end = Some((now(), r.map_err(|e| e.to_string())));
        }
    }
}

struct Proc {
    idem: Idem,
    cut: Arc<AtomicBool>,
    tasks: JoinSet<()>,
    calls: Vec<usize>,
}

fn start(s: &LockSchedule, shared: &Arc<dyn Store>, inc: u64, healed: &Arc<AtomicBool>) -> Proc {
    let cut = Arc::new(AtomicBool::new(false));
    let store = ProcStore::new(
        Arc::clone(shared),
        Arc::clone(&cut),
        s.reply_delay,
        s.seed ^ inc.wrapping_mul(0x9E37_79B9),
        Arc::clone(healed),
    );
    let idem = Idem::builder()
        .shared_store(Arc::new(store))
        .namespace("simlock")
        .op_timeout(s.op_timeout)
        .build()
        .expect("a valid handle");
    idem.__seed_jitter(super::jitter_seed(s.seed, inc));
    Proc {
        idem,
        cut,
        tasks: JoinSet::new(),
        calls: Vec::new(),
    }
}

pub(crate) fn run(s: &LockSchedule) -> LockOutput {
    super::paused().block_on(execute(Arc::new(s.clone())))
}

async fn execute(s: Arc<LockSchedule>) -> LockOutput {
    let world = World::new();
    let recording: Arc<dyn Store> = Arc::new(RecordingStore::new(
        Arc::new(idem::MemoryStore::new()),
        Arc::clone(&world),
    ));
    let faulty = Arc::new(FaultyStore::new(Arc::clone(&recording)));
    faulty.set_plan(s.plan);
    let shared: Arc<dyn Store> = faulty.clone();
    let healed = Arc::new(AtomicBool::new(false));
    let mut inc = 0;
    let mut procs: Vec<Proc> = (0..s.procs)
        .map(|_| {
            inc += 1;
            start(&s, &shared, inc, &healed)
        })
        .collect();
    let nprobes = s.procs * s.keys;
    let cx = Arc::new(Ctx {
        rows: Rows::default(),
        upd: FencedUpdate::new(Dialect::Postgres, "t_stock", "fence").expect("valid names"),
        infos: Arc::new(Mutex::new(vec![
            LockInfo::default();
            s.calls.len() + nprobes
        ])),
        sql_errors: Mutex::default(),
        epoch: tokio::time::Instant::now(),
    });
    let mut steps: Vec<(Duration, Option<usize>, Option<LockEvent>)> = s
        .calls
        .iter()
        .map(|c| (c.at, Some(c.id), None))
        .chain(s.events.iter().map(|(t, e)| (*t, None, Some(*e))))
        .collect();
    steps.sort_by_key(|x| x.0);
    let mut dead = Vec::new();
    for (t, call, ev) in steps {
        tokio::time::sleep_until(cx.epoch + t).await;
        if let Some(id) = call {
            let c = s.calls[id].clone();
            let p = &mut procs[c.proc];
            p.calls.push(id);
            let fut = acquire(Arc::clone(&cx), p.idem.clone(), Arc::clone(&s), c);
            p.tasks.spawn(fut);
        }
        match ev {
            Some(LockEvent::Outage(d)) => {
                faulty.set_unavailable(true);
                let f = Arc::clone(&faulty);
                tokio::spawn(async move {
                    tokio::time::sleep(d).await;
                    f.set_unavailable(false);
                });
            }
            Some(LockEvent::LoseKeys) => {
                let _ = faulty.lose_all_keys().await;
            }
            Some(LockEvent::Forget(k)) => {
                let key = procs[0].idem.key("lock:sim", &[&k]);
                let _ = recording.forget(key.as_str()).await;
            }
            Some(LockEvent::Crash(p)) => {
                inc += 1;
                let old = std::mem::replace(&mut procs[p], start(&s, &shared, inc, &healed));
                old.cut.store(true, Ordering::SeqCst);
                let mut tasks = old.tasks;
                tasks.abort_all();
                let now = cx.epoch.elapsed();
                let mut infos = cx.infos.lock().unwrap();
                for id in old.calls {
                    if infos[id].end.is_none() && infos[id].gone.is_none() {
                        infos[id].gone = Some(now);
                    }
                }
                drop(infos);
                dead.push(tasks);
            }
            None => {}
        }
    }
    for p in procs.iter_mut() {
        while p.tasks.join_next().await.is_some() {}
    }
    for mut d in dead {
        while d.join_next().await.is_some() {}
    }
    faulty.set_plan(None);
    faulty.set_unavailable(false);
    healed.store(true, Ordering::SeqCst);
    tokio::time::sleep(s.lease + 2 * s.op_timeout + Duration::from_secs(1)).await;
    let mut probe_keys = Vec::new();
    let mut id = s.calls.len();
    for k in 0..s.keys {
        for p in &procs {
            probe_keys.push(k);
            let c = LockCall {
                id,
                proc: 0,
                key: k,
                at: cx.epoch.elapsed(),
                body_time: Duration::from_millis(10),
                cancel_after: None,
            };
            acquire(Arc::clone(&cx), p.idem.clone(), Arc::clone(&s), c).await;
            id += 1;
        }
    }
    let calls = cx.infos.lock().unwrap().clone();
    let sql_errors = cx.sql_errors.lock().unwrap().clone();
    let keys: Vec<String> = (0..s.keys)
        .map(|k| procs[0].idem.key("lock:sim", &[&k]).as_str().to_owned())
        .collect();
    let mut seen = std::collections::HashSet::new();
    let claims = world
        .store_log()
        .into_iter()
        .filter_map(|e| match e.op {
            StoreOp::Claim {
                owner,
                res: Ok(Claim::Claimed { fence }),
                ..
            } if seen.insert((owner, fence.get())) => {
                Some((keys.iter().position(|k| *k == e.key)?, fence.get()))
            }
            _ => None,
        })
        .collect();
    LockOutput {
        calls,
        probe_keys,
        sql_errors,
        claims,
    }
}
