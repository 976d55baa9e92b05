//! Four OS processes guard the same 500 keys on the shared Redis: one execution
//! per key. The processes are this test binary re-executed in worker mode
//! (`IDEM_REDIS_WORKER` set), so no extra binary has to be built.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use idem::store::redis::{RedisStore, redis};
use idem::{Error, How, Idem};

use crate::support::redis_server::{SHARED_URL, SharedPrefix};

const PROCS: usize = 4;
/// 500 keys in CI; `IDEM_STRESS=1` runs 5000 (the workers inherit the variable).
fn keys() -> u32 {
    if std::env::var_os("IDEM_STRESS").is_some() {
        5_000
    } else {
        500
    }
}
const TEST_NAME: &str = "redis::procs::four_processes_one_execution_per_key";

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn counter_key(prefix: &str, k: u32) -> String {
    format!("{prefix}count:{k}")
}

/// Worker mode: guard every key once, counting executions in a Redis counter per key.
async fn worker(prefix: String, id: usize, start_at: u64) {
    let store = RedisStore::builder(SHARED_URL)
        .prefix(prefix.clone())
        .connect()
        .await
        .unwrap();
    let con = store.connection();
    let op_timeout = Duration::from_secs(3);
    let idem = Idem::builder()
        .store(store)
        .namespace("procs")
        .op_timeout(op_timeout)
        .build()
        .unwrap();
    // Start together; half the workers walk the keys forwards, half backwards.
    tokio::time::sleep(Duration::from_millis(start_at.saturating_sub(now_ms()))).await;
    let order: Vec<u32> = if id.is_multiple_of(2) {
        (0..keys()).collect()
    } else {
        (0..keys()).rev().collect()
    };
    let stats: Arc<[AtomicUsize; 3]> = Arc::default();
    let limit = Arc::new(tokio::sync::Semaphore::new(32));
    let mut set = tokio::task::JoinSet::new();
    for k in order {
        let permit = Arc::clone(&limit).acquire_owned().await.unwrap();
        let (idem, con, stats, prefix) = (
            idem.clone(),
            con.clone(),
            Arc::clone(&stats),
            prefix.clone(),
        );
        set.spawn(async move {
            let _permit = permit;
            let guard = idem.guard("job", &[&k]);
            // Three op timeouts: the lease / 3 clamp leaves calls the whole budget
            // (a 5 s lease cut them to 1.67 s; issue 18).
            let out = guard
                .lease(op_timeout * 3)
                .run(|| async move {
                    let mut con = con;
                    let _: i64 = redis::cmd("INCR")
                        .arg(counter_key(&prefix, k))
                        .query_async(&mut con)
                        .await
                        .map_err(|e| Error::Config(e.to_string()))?;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok::<_, Error>(k)
                })
                .await
                .unwrap_or_else(|e| panic!("key {k}: {e:?}"));
            assert_eq!(*out.value(), k);
            let slot = match out.how() {
                How::Executed => 0,
                How::Replayed => 1,
                How::Waited => 2,
                other => panic!("unexpected {other:?}"),
            };
            stats[slot].fetch_add(1, Ordering::SeqCst);
        });
    }
    while let Some(r) = set.join_next().await {
        r.unwrap();
    }
    println!(
        "\nWORKER executed={} replayed={} waited={}",
        stats[0].load(Ordering::SeqCst),
        stats[1].load(Ordering::SeqCst),
        stats[2].load(Ordering::SeqCst)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_one_execution_per_key() {
    if let Ok(prefix) = std::env::var("IDEM_REDIS_WORKER") {
        let id = std::env::var("IDEM_REDIS_WORKER_ID")
            .unwrap()
            .parse()
            .unwrap();
        let start_at = std::env::var("IDEM_REDIS_WORKER_START")
            .unwrap()
            .parse()
            .unwrap();
        return worker(prefix, id, start_at).await;
    }
    let prefix = SharedPrefix::new();
    let exe = std::env::current_exe().unwrap();
    let start_at = now_ms() + 1_500;
    let children: Vec<_> = (0..PROCS)
        .map(|id| {
            Command::new(&exe)
                .args([TEST_NAME, "--exact", "--nocapture", "--test-threads=1"])
                .env("IDEM_REDIS_WORKER", &prefix.0)
                .env("IDEM_REDIS_WORKER_ID", id.to_string())
                .env("IDEM_REDIS_WORKER_START", start_at.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut totals = [0usize; 3];
    for child in children {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "worker failed: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = stdout
            .lines()
            .find_map(|l| l.find("WORKER ").map(|at| &l[at + "WORKER ".len()..]))
            .unwrap_or_else(|| panic!("no WORKER line in {stdout}"));
        for (i, part) in line.split(' ').enumerate() {
            totals[i] += part.split('=').nth(1).unwrap().parse::<usize>().unwrap();
        }
    }
    println!(
        "{PROCS} processes x {} keys: executed={} replayed={} waited={}",
        keys(),
        totals[0],
        totals[1],
        totals[2]
    );
    assert_eq!(totals[0], keys() as usize, "one execution per key");
    assert_eq!(totals.iter().sum::<usize>(), PROCS * keys() as usize);
    assert!(totals[2] > 0, "cross-process waiters observed");

    let store = RedisStore::connect(SHARED_URL).await.unwrap();
    let mut con = store.connection();
    let keys: Vec<String> = (0..keys()).map(|k| counter_key(&prefix.0, k)).collect();
    let counts: Vec<Option<u32>> = redis::cmd("MGET")
        .arg(&keys)
        .query_async(&mut con)
        .await
        .unwrap();
    let wrong: Vec<_> = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c != Some(1))
        .collect();
    assert!(
        wrong.is_empty(),
        "keys not executed exactly once: {wrong:?}"
    );
}
