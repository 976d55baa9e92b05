//! Interleaved A/B measurement: many small batches, alternating sides (A B B A …)
//! so machine noise hits both, and the median of the per-batch cost ratios.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub(crate) type BoxFut = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>;
/// One call of a side; the argument is a call index unique within the run of that side.
pub(crate) type Op = Arc<dyn Fn(u64) -> BoxFut + Send + Sync>;

/// Wraps an async closure as an [`Op`].
pub(crate) fn op<F, Fut>(f: F) -> Op
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    Arc::new(move |i| Box::pin(f(i)))
}

/// Side A of every duplicate scenario: a replay, through idem, of one of `keys`
/// keys that set-up finished with the same scene and parts (`order-create:dup:k`).
pub(crate) fn guarded_replay(idem: idem::Idem, keys: u64, ttl: Duration, lease: Duration) -> Op {
    op(move |i| {
        let idem = idem.clone();
        async move {
            let out = idem
                .guard("order-create", &[&"dup", &(i % keys)])
                .lease(lease)
                .ttl(ttl)
                .run(|| async { Ok::<_, idem::Error>(crate::redis::result()) })
                .await?;
            anyhow::ensure!(out.is_replay(), "expected a replay");
            std::hint::black_box(out.into_inner());
            Ok(())
        }
    })
}

/// One contender in a scenario.
pub(crate) struct Side {
    pub(crate) name: &'static str,
    pub(crate) op: Op,
}

/// How long and how finely to measure.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct Plan {
    /// Wall time spent on one scenario (all sides together).
    pub(crate) budget: Duration,
    /// Target wall time of one batch.
    pub(crate) batch: Duration,
    /// At least this many rounds, whatever the budget.
    pub(crate) min_rounds: usize,
}

/// The raw measurements of one side.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct SideRun {
    pub(crate) name: String,
    pub(crate) calls: u64,
    pub(crate) secs: f64,
    /// Per-call latencies in nanoseconds.
    pub(crate) lat_ns: Vec<u64>,
    /// Per batch: (calls, seconds).
    pub(crate) batches: Vec<(u64, f64)>,
}

impl SideRun {
    pub(crate) fn calls_per_s(&self) -> f64 {
        self.calls as f64 / self.secs
    }
}

/// Runs `calls` calls of `op` with `concurrency` callers; returns the wall time
/// and appends each call's latency.
async fn batch(
    op: &Op,
    next: &Arc<AtomicU64>,
    calls: u64,
    concurrency: usize,
    lat: &mut Vec<u64>,
) -> anyhow::Result<f64> {
    let t0 = Instant::now();
    if concurrency <= 1 {
        for _ in 0..calls {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let s = Instant::now();
            op(i).await?;
            lat.push(s.elapsed().as_nanos() as u64);
        }
        return Ok(t0.elapsed().as_secs_f64());
    }
    let left = Arc::new(AtomicU64::new(calls));
    let mut tasks = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let op = Arc::clone(op);
        let next = Arc::clone(next);
        let left = Arc::clone(&left);
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            while left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok()
            {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let s = Instant::now();
                op(i).await?;
                lat.push(s.elapsed().as_nanos() as u64);
            }
            anyhow::Ok(lat)
        }));
    }
    for t in tasks {
        lat.extend(t.await??);
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// Measures every side: a calibration batch each, then rounds of one batch per
/// side, the order reversed every other round, until the budget is spent.
pub(crate) async fn measure(
    sides: &[Side],
    concurrency: usize,
    plan: Plan,
) -> anyhow::Result<Vec<SideRun>> {
    let counters: Vec<Arc<AtomicU64>> = sides.iter().map(|_| Arc::default()).collect();
    // Calibrate on the slowest side: warm-up batches of growing size.
    let mut per_call = 0f64;
    for (s, next) in sides.iter().zip(&counters) {
        let mut scratch = Vec::new();
        let n = (concurrency as u64 * 4).max(32);
        batch(&s.op, next, n, concurrency, &mut scratch).await?;
        let secs = batch(&s.op, next, n, concurrency, &mut scratch).await?;
        per_call = per_call.max(secs / n as f64);
    }
    let calls = ((plan.batch.as_secs_f64() / per_call) as u64).max(concurrency as u64 * 2);
    let mut runs: Vec<SideRun> = sides
        .iter()
        .map(|s| SideRun {
            name: s.name.to_owned(),
            ..SideRun::default()
        })
        .collect();
    let start = Instant::now();
    let mut round = 0usize;
    while round < plan.min_rounds || start.elapsed() < plan.budget {
        let mut order: Vec<usize> = (0..sides.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let r = &mut runs[i];
            let secs = batch(
                &sides[i].op,
                &counters[i],
                calls,
                concurrency,
                &mut r.lat_ns,
            )
            .await?;
            r.calls += calls;
            r.secs += secs;
            r.batches.push((calls, secs));
        }
        round += 1;
    }
    Ok(runs)
}

/// The summary of a side.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SideSummary {
    pub(crate) name: String,
    pub(crate) calls: u64,
    pub(crate) calls_per_s: f64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
}

pub(crate) fn summarize(runs: &[SideRun]) -> Vec<SideSummary> {
    runs.iter()
        .map(|r| {
            let mut l = r.lat_ns.clone();
            l.sort_unstable();
            SideSummary {
                name: r.name.clone(),
                calls: r.calls,
                calls_per_s: r.calls_per_s(),
                p50_us: percentile(&l, 0.50) / 1e3,
                p99_us: percentile(&l, 0.99) / 1e3,
            }
        })
        .collect()
}

fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i] as f64
}

/// Per batch pair: (cost per call of `a`) / (cost per call of `b`); above 1 means
/// `a` is slower. Pairs are the k-th batch of each side, which ran next to each
/// other.
pub(crate) fn pair_ratios(a: &SideRun, b: &SideRun) -> Vec<f64> {
    batch_ratios(&a.batches, &b.batches)
}

fn batch_ratios(a: &[(u64, f64)], b: &[(u64, f64)]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|((na, sa), (nb, sb))| (sa / *na as f64) / (sb / *nb as f64))
        .collect()
}

/// The rounds of a scenario are cut into this many consecutive repeats, each
/// interleaved like the whole (every side ran in every round of each).
pub(crate) const REPEATS: usize = 3;

/// Smallest, median and largest of the repeats' values.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Spread {
    pub(crate) min: f64,
    pub(crate) median: f64,
    pub(crate) max: f64,
}

fn spread(mut v: Vec<f64>) -> Spread {
    let median = median(&mut v);
    Spread {
        min: v.first().copied().unwrap_or(f64::NAN),
        median,
        max: v.last().copied().unwrap_or(f64::NAN),
    }
}

/// The `r`-th of [`REPEATS`] consecutive parts of a side's batches.
fn cut(v: &[(u64, f64)], r: usize) -> &[(u64, f64)] {
    let n = v.len();
    &v[r * n / REPEATS..(r + 1) * n / REPEATS]
}

/// Per side, over [`REPEATS`] repeats: calls/s (summed over the processes that
/// ran at once), and A's cost ratio to the side (the median of the repeat's
/// batch pairs; `None` for A). `per_proc` holds each process's runs.
pub(crate) fn repeats(per_proc: &[Vec<SideRun>]) -> Vec<(Spread, Option<Spread>)> {
    let sides = per_proc.first().map_or(0, Vec::len);
    (0..sides)
        .map(|s| {
            let mut rates = vec![0.0; REPEATS];
            let mut pairs: Vec<Vec<f64>> = vec![Vec::new(); REPEATS];
            for runs in per_proc {
                for r in 0..REPEATS {
                    let part = cut(&runs[s].batches, r);
                    let (calls, secs) = part
                        .iter()
                        .fold((0u64, 0f64), |(c, t), (n, x)| (c + n, t + x));
                    rates[r] += calls as f64 / secs;
                    if s > 0 {
                        pairs[r].extend(batch_ratios(cut(&runs[0].batches, r), part));
                    }
                }
            }
            let ratio = (s > 0).then(|| spread(pairs.iter_mut().map(|p| median(p)).collect()));
            (spread(rates), ratio)
        })
        .collect()
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Merges the runs of several processes that ran at the same time: calls and
/// rates add up (each process's calls/s over its own busy time).
pub(crate) fn merge_procs(per_proc: Vec<Vec<SideRun>>) -> Vec<SideRun> {
    let mut out: Vec<SideRun> = Vec::new();
    let mut rates: Vec<f64> = Vec::new();
    for runs in per_proc {
        for (i, r) in runs.into_iter().enumerate() {
            if out.len() <= i {
                out.push(SideRun {
                    name: r.name.clone(),
                    ..SideRun::default()
                });
                rates.push(0.0);
            }
            rates[i] += r.calls_per_s();
            let o = &mut out[i];
            o.calls += r.calls;
            o.lat_ns.extend(r.lat_ns);
            o.batches.extend(r.batches);
        }
    }
    for (o, rate) in out.iter_mut().zip(rates) {
        o.secs = o.calls as f64 / rate;
    }
    out
}
