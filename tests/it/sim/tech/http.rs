//! The HTTP layer (`IdempotencyLayer` on an axum route) as a `tower::Service`
//! called without sockets, on the guard's store chain with its faults (plan,
//! outages, lost keys, crashes, callers dropped at any time): requests with an
//! `Idempotency-Key`, repeated, concurrent, with another body now and then; the
//! handler answers `201` (the business effect) or, sometimes, `500` (released).
//!
//! | invariant | statement |
//! |---|---|
//! | `http-once` | (lease-safe runs, keys kept) once a handler's `201` reached its client, no handler runs again on that key: business effects equal distinct keys |
//! | `http-replay-first` | a replayed response (`Idempotent-Replayed: true`) is a `201` a handler of that key produced, for a request with the same body |
//! | `http-mismatch` | `422` only when another body was seen on the key |
//! | `http-progress` | after healing and a lease, every process gets `201` (or `422` for a key whose stored body differs) |

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::routing::post;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use idem::http::IdempotencyLayer;
use idem::{FaultPlan, FaultyStore, Idem, Store};
use tokio::task::JoinSet;
use tower_service::Service;

use crate::sim::history::World;
use crate::sim::recording::{ProcStore, RecordingStore};
use crate::sim::rng::Rng;

#[derive(Debug, Clone)]
pub(crate) struct HttpCall {
    pub(crate) proc: usize,
    pub(crate) key: usize,
    pub(crate) at: Duration,
    pub(crate) body: u8,
    pub(crate) fail: bool,
    pub(crate) handler_time: Duration,
    pub(crate) cancel_after: Option<Duration>,
}

#[derive(Debug, Clone)]
pub(crate) struct HttpSchedule {
    pub(crate) seed: u64,
    pub(crate) procs: usize,
    pub(crate) keys: usize,
    pub(crate) lease: Duration,
    pub(crate) op_timeout: Duration,
    pub(crate) plan: Option<FaultPlan>,
    /// (at, outage length) or a crash of a process.
    pub(crate) outages: Vec<(Duration, Duration)>,
    pub(crate) crash: Option<(Duration, usize)>,
    pub(crate) calls: Vec<HttpCall>,
}

impl HttpSchedule {
    pub(crate) fn generate(seed: u64) -> HttpSchedule {
        let mut r = Rng::new(seed);
        let procs = r.range(1, 2) as usize;
        let keys = r.range(1, 2) as usize;
        let op_timeout = r.ms(100, 500);
        let lease = r.ms(1500, 3000);
        let mut at = Duration::ZERO;
        let calls = (0..r.range(2, 6))
            .map(|_| {
                at = if r.chance(40) { at } else { at + r.ms(0, 1500) };
                HttpCall {
                    proc: r.range(0, procs as u64 - 1) as usize,
                    key: r.range(0, keys as u64 - 1) as usize,
                    at,
                    body: u8::from(r.chance(10)),
                    fail: r.chance(15),
                    handler_time: r.ms(0, 600),
                    cancel_after: r.chance(15).then(|| r.ms(0, 1500)),
                }
            })
            .collect();
        HttpSchedule {
            seed,
            procs,
            keys,
            lease,
            op_timeout,
            plan: r.chance(40).then(|| FaultPlan {
                seed: r.next_u64(),
                unavailable: r.range(0, 15) as f64 / 100.0,
                lost_reply: r.range(0, 15) as f64 / 100.0,
                lost_key: r.range(0, 5) as f64 / 100.0,
                slow: r.range(0, 20) as f64 / 100.0,
                delay: r.ms(1, 400),
            }),
            outages: (0..r.range(0, 1))
                .map(|_| (r.ms(0, 4000), r.ms(20, 1500)))
                .collect(),
            crash: r
                .chance(15)
                .then(|| (r.ms(0, 4000), r.range(0, procs as u64 - 1) as usize)),
            calls,
        }
    }

    pub(crate) fn lease_safe(&self) -> bool {
        self.plan.is_none() && self.outages.is_empty()
    }
}

/// What each request did: the handler's run (start, end, status) and the
/// answer (status, body, replayed), or `None` when dropped.
#[derive(Debug, Clone, Default)]
pub(crate) struct HttpInfo {
    pub(crate) handler: Option<(Duration, Option<Duration>, u16)>,
    /// How many handlers had started before this one: handlers that start at
    /// one virtual instant are ordered by it, not by their request's index.
    pub(crate) started: usize,
    pub(crate) answer: Option<(u16, String, bool)>,
    pub(crate) gone: bool,
}

type Infos = Arc<Mutex<Vec<HttpInfo>>>;

fn app(idem: Idem, lease: Duration, infos: Infos, epoch: tokio::time::Instant) -> Router {
    let handler = move |headers: HeaderMap, _body: String| {
        let infos = Arc::clone(&infos);
        async move {
            let h = |n: &str| {
                headers
                    .get(n)
                    .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
            };
            let (id, ms, fail) = (
                h("x-call").unwrap_or(0) as usize,
                h("x-time").unwrap_or(0),
                h("x-fail") == Some(1),
            );
            {
                let mut inf = infos.lock().unwrap();
                inf[id].started = inf.iter().filter(|c| c.handler.is_some()).count();
                inf[id].handler = Some((epoch.elapsed(), None, 0));
            }
            tokio::time::sleep(Duration::from_millis(ms)).await;
            let status = if fail {
                StatusCode::INTERNAL_SERVER_ERROR
            } else {
                StatusCode::CREATED
            };
            if let Some(x) = infos.lock().unwrap()[id].handler.as_mut() {
                *x = (x.0, Some(epoch.elapsed()), status.as_u16());
            }
            (status, format!("order {id}"))
        }
    };
    Router::new()
        .route("/orders", post(handler))
        .layer(IdempotencyLayer::new(idem).scene("orders").lease(lease))
}

async fn request(mut svc: Router, id: usize, c: HttpCall, infos: Infos) {
    let req = Request::post("/orders")
        .header("idempotency-key", format!("k{}", c.key))
        .header("x-call", id.to_string())
        .header("x-time", c.handler_time.as_millis().to_string())
        .header("x-fail", u8::from(c.fail).to_string())
        .body(Body::from(format!("payload {}", c.body)))
        .expect("a request");
    let fut = async move {
        let res = svc.call(req).await.expect("infallible");
        let status = res.status().as_u16();
        let replayed = res.headers().contains_key(idem::http::IDEMPOTENT_REPLAYED);
        let body = res
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        (
            status,
            String::from_utf8_lossy(&body).into_owned(),
            replayed,
        )
    };
    let r = match c.cancel_after {
        Some(d) => tokio::time::timeout(d, fut).await.ok(),
        None => Some(fut.await),
    };
    let mut infos = infos.lock().unwrap();
    match r {
        Some(a) => infos[id].answer = Some(a),
        None => infos[id].gone = true,
    }
}

pub(crate) fn run(s: &HttpSchedule) -> (Vec<HttpInfo>, Vec<(usize, usize)>) {
    super::paused().block_on(execute(s))
}

async fn execute(s: &HttpSchedule) -> (Vec<HttpInfo>, Vec<(usize, usize)>) {
    let world = World::new();
    let recording: Arc<dyn Store> = Arc::new(RecordingStore::new(
        Arc::new(idem::MemoryStore::new()),
        Arc::clone(&world),
    ));
    let faulty = Arc::new(FaultyStore::new(recording));
    faulty.set_plan(s.plan);
    let shared: Arc<dyn Store> = faulty.clone();
    let healed = Arc::new(AtomicBool::new(false));
    let nprobes = s.procs * s.keys;
    let infos: Infos = Arc::new(Mutex::new(vec![
        HttpInfo::default();
        s.calls.len() + nprobes
    ]));
    let epoch = tokio::time::Instant::now();
    let start = |inc: u64| {
        let cut = Arc::new(AtomicBool::new(false));
        let store = ProcStore::new(
            Arc::clone(&shared),
            Arc::clone(&cut),
            None,
            s.seed ^ inc,
            Arc::clone(&healed),
        );
        let idem = Idem::builder()
            .shared_store(Arc::new(store))
            .namespace("simhttp")
            .op_timeout(s.op_timeout)
            .build()
            .expect("a valid handle");
        idem.__seed_jitter(super::jitter_seed(s.seed, inc));
        (
            app(idem, s.lease, Arc::clone(&infos), epoch),
            cut,
            JoinSet::new(),
            Vec::new(),
        )
    };
    let mut procs: Vec<_> = (0..s.procs as u64).map(start).collect();
    let mut steps: Vec<(Duration, u8, usize)> = s
        .calls
        .iter()
        .enumerate()
        .map(|(i, c)| (c.at, 0, i))
        .collect();
    steps.extend(s.outages.iter().enumerate().map(|(i, o)| (o.0, 1, i)));
    steps.extend(s.crash.iter().map(|c| (c.0, 2, c.1)));
    steps.sort();
    for (t, kind, i) in steps {
        tokio::time::sleep_until(epoch + t).await;
        match kind {
            0 => {
                let c = s.calls[i].clone();
                let p = &mut procs[c.proc];
                p.3.push(i);
                p.2.spawn(request(p.0.clone(), i, c, Arc::clone(&infos)));
            }
            1 => {
                faulty.set_unavailable(true);
                let (f, d) = (Arc::clone(&faulty), s.outages[i].1);
                tokio::spawn(async move {
                    tokio::time::sleep(d).await;
                    f.set_unavailable(false);
                });
            }
            _ => {
                let old = std::mem::replace(&mut procs[i], start(100 + i as u64));
                old.1.store(true, Ordering::SeqCst);
                let mut tasks = old.2;
                tasks.abort_all();
                while tasks.join_next().await.is_some() {}
                let mut inf = infos.lock().unwrap();
                for id in old.3 {
                    if inf[id].answer.is_none() {
                        inf[id].gone = true;
                    }
                }
            }
        }
    }
    for p in procs.iter_mut() {
        while p.2.join_next().await.is_some() {}
    }
    faulty.set_plan(None);
    faulty.set_unavailable(false);
    healed.store(true, Ordering::SeqCst);
    tokio::time::sleep(s.lease + 2 * s.op_timeout + Duration::from_secs(2)).await;
    let mut probes = Vec::new();
    let mut id = s.calls.len();
    for k in 0..s.keys {
        for (pi, p) in procs.iter().enumerate() {
            let c = HttpCall {
                proc: pi,
                key: k,
                at: epoch.elapsed(),
                body: 0,
                fail: false,
                handler_time: Duration::from_millis(10),
                cancel_after: None,
            };
            request(p.0.clone(), id, c, Arc::clone(&infos)).await;
            probes.push((id, k));
            id += 1;
        }
    }
    let out = infos.lock().unwrap().clone();
    (out, probes)
}
