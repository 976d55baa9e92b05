//! What a recorded run must say about itself (issue 29, item 5): the commit
//! it was built from, and the load average at each scenario's start and end
//! (the machine is shared, and a loaded machine moves the ratios).

/// `git rev-parse --short HEAD` at run time, `+dirty` when the work tree has
/// changes, or the build's `IDEM_BENCH_COMMIT` when git cannot answer (a
/// binary copied elsewhere).
pub(crate) fn commit() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(head) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty { format!("{head}+dirty") } else { head }
        }
        None => option_env!("IDEM_BENCH_COMMIT")
            .unwrap_or("unknown")
            .to_owned(),
    }
}

/// The 1-minute load average from `/proc/loadavg` (NaN where there is none).
pub(crate) fn load1() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}
