//! A test that crashes a process: this test binary run again as a child
//! (the child mode chosen by an environment variable), which prints a mark
//! line at the instant to crash and then blocks; the parent reads the mark
//! and SIGKILLs the child by its PID.

use std::io::BufRead as _;
use std::time::Duration;

/// Runs test `test` of this binary as a child with `env` set, waits (up to
/// 120 s) for a line `<mark> <n>` on its output, SIGKILLs it, and returns
/// `n`. `what` names the awaited event in the failure message.
pub(crate) fn run_until_mark_then_kill(
    test: &str,
    env: (&str, &str),
    mark: &str,
    what: &str,
) -> usize {
    let exe = std::env::current_exe().expect("test binary");
    let mut child = std::process::Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(env.0, env.1)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("spawn the child process");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let prefix = format!("{mark} ");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if let Some((_, n)) = line.split_once(&prefix) {
                let _ = tx.send(n.trim().parse::<usize>().unwrap());
                return;
            }
        }
    });
    let got = rx.recv_timeout(Duration::from_secs(120));
    // SIGKILL (std's `Child::kill` on Unix), by the child's own PID.
    let _ = child.kill();
    let _ = child.wait();
    got.unwrap_or_else(|e| panic!("the child process {what} within 120 s: {e}"))
}
