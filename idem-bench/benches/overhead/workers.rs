//! Scenarios measured from several processes at once: this binary run again
//! as workers (`--worker ID`), each printing its raw runs as JSON.

use crate::Env;
use crate::harness::SideRun;
use crate::scenarios::Scenario;

/// Re-runs this binary as `procs` workers on the same scenario at the same time.
pub(crate) async fn spawn_workers(
    env: &Env,
    s: &Scenario,
    quick: bool,
) -> anyhow::Result<Vec<Vec<SideRun>>> {
    let exe = std::env::current_exe()?;
    let mut handles = Vec::new();
    for p in 0..s.procs {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args([
            "--worker",
            &s.id,
            "--ns",
            &env.ns,
            "--tag",
            &format!("w{p}"),
        ])
        .env("IDEM_BENCH_REDIS", &env.redis_url)
        .env("IDEM_BENCH_PG", &env.pg_url)
        .env("IDEM_BENCH_MYSQL", &env.mysql_url);
        if quick {
            cmd.arg("--quick");
        }
        handles.push(tokio::task::spawn_blocking(move || cmd.output()));
    }
    let mut out = Vec::new();
    for h in handles {
        let o = h.await??;
        anyhow::ensure!(
            o.status.success(),
            "worker failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        out.push(serde_json::from_slice(&o.stdout)?);
    }
    Ok(out)
}
