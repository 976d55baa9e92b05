//! `--count ID --side N`: one side of scenario `ID` (`http-dup-c64`,
//! `lock-c64`, …) alone on one thread, for callgrind. Everything the call
//! makes happens on that thread (a current-thread runtime: the loopback
//! server, the client, the store connection's task), so the count per call
//! is the process's whole CPU work for it, at the scenario's concurrency:
//!
//! ```sh
//! valgrind --tool=callgrind --toggle-collect='*count*measured*' \
//!   target/release/deps/overhead-<hash> --count http-dup-c64 --side 0
//! ```
//!
//! 20,000 calls by default, `IDEM_BENCH_COUNT_CALLS` to change it. (`--count
//! macro-dup` and the other `macro_rows` names, without `--side`, count the
//! macro rows' memory calls.)

use std::hint::black_box;

use crate::harness::Op;
use crate::{Env, build_sides, scenarios::scenarios};

const CALLS: u64 = 20_000;

pub(crate) fn side(env: &Env, id: &str, side: usize) -> anyhow::Result<()> {
    let s = scenarios()
        .into_iter()
        .find(|s| s.id == id)
        .ok_or_else(|| anyhow::anyhow!("--count {id}: no such scenario"))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let sides = rt.block_on(build_sides(env, &s))?;
    let chosen = sides
        .get(side)
        .ok_or_else(|| anyhow::anyhow!("--side {side}: `{id}` has {} sides", sides.len()))?;
    let conc = s.concurrency as u64;
    let n = match std::env::var("IDEM_BENCH_COUNT_CALLS") {
        Ok(v) => v.parse()?,
        Err(_) => CALLS,
    };
    // Warm-up (connections, pools, caches) on indices the count never uses.
    rt.block_on(calls(&chosen.op, 10 * n, n / 10, conc))?;
    let n = measured(&rt, &chosen.op, n, conc)?;
    println!("{id} side {side} ({}): {n} calls at c={conc}", chosen.name);
    Ok(())
}

#[inline(never)]
fn measured(rt: &tokio::runtime::Runtime, op: &Op, n: u64, conc: u64) -> anyhow::Result<u64> {
    rt.block_on(calls(op, 0, n, conc))?;
    Ok(black_box(n))
}

/// `n` calls from index `from`, `conc` at a time (each worker its own stride).
async fn calls(op: &Op, from: u64, n: u64, conc: u64) -> anyhow::Result<()> {
    let workers = (0..conc).map(|w| async move {
        let mut i = w;
        while i < n {
            op(from + i).await?;
            i += conc;
        }
        anyhow::Ok(())
    });
    futures_util::future::try_join_all(workers).await?;
    Ok(())
}
