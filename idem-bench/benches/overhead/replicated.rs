//! Replicated durability's cost: the guard with `Durability::Replicated {
//! replicas: 1 }` (a `WAIT 1` after a claim that took the key and after a
//! complete) against the same guard without it (the plain native claim), on a
//! primary with one replica that the benchmark starts on spare ports (nothing
//! persisted) and kills at the end. A duplicate of a finished call writes
//! nothing and sends no `WAIT`; a first call sends two. Recorded, no target.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idem::store::redis::{Durability, RedisStore};

use crate::Env;
use crate::harness::{Op, Side, op};
use crate::redis::{DUP_KEYS, DUP_TTL, LEASE, PREFIX, TTL, guarded, result, sides};

const WAIT_1: Durability = Durability::Replicated {
    replicas: 1,
    timeout: Duration::from_millis(500),
};

/// A primary and its replica, killed (and their directories removed) on drop.
struct Pair {
    nodes: Vec<(Child, std::path::PathBuf)>,
    port: u16,
}

impl Pair {
    fn start() -> anyhow::Result<Pair> {
        let base = 12_000 + (crate::rand_u64() % 10_000) as u16;
        let mut pair = Pair {
            nodes: Vec::new(),
            port: base,
        };
        for (port, replica_of) in [(base, None), (base + 1, Some(base))] {
            let dir = std::env::temp_dir().join(format!("idem-bench-replicated-{port}"));
            std::fs::create_dir_all(&dir)?;
            let mut cmd = Command::new("redis-server");
            cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no", "--dir"])
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if let Some(p) = replica_of {
                cmd.args(["--replicaof", "127.0.0.1", &p.to_string()]);
            }
            pair.nodes.push((cmd.spawn()?, dir));
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let out = Command::new("redis-cli")
                .args(["-p", &base.to_string(), "INFO", "replication"])
                .output()?;
            if String::from_utf8_lossy(&out.stdout).contains("state=online") {
                return Ok(pair);
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the replica did not sync in 10 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for (child, dir) in &mut self.nodes {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Two handles in the run's namespace on the pair's primary: without `WAIT`
/// and with `WAIT 1`.
async fn handles(env: &Env, pair: &Pair) -> anyhow::Result<(idem::Idem, idem::Idem)> {
    let url = format!("redis://127.0.0.1:{}", pair.port);
    let mut out = Vec::new();
    for d in [Durability::Primary, WAIT_1] {
        let store = RedisStore::builder(&url)
            .prefix(PREFIX)
            .durability(d)
            .connect()
            .await?;
        out.push(crate::redis::idem_on(env, store)?);
    }
    let waited = out.pop().expect("two handles");
    Ok((out.pop().expect("two handles"), waited))
}

/// `op`, keeping the pair alive for as long as the side exists.
fn keep(pair: &Arc<Pair>, inner: Op) -> Op {
    let pair = Arc::clone(pair);
    op(move |i| {
        let _alive = &pair;
        inner(i)
    })
}

/// A: a duplicate through idem with `WAIT 1` (it sends none). B: the same
/// without `WAIT`.
pub(crate) async fn duplicate(env: &Env) -> anyhow::Result<Vec<Side>> {
    let pair = Arc::new(Pair::start()?);
    let (plain, waited) = handles(env, &pair).await?;
    let part: Arc<str> = "wdup".into();
    for k in 0..DUP_KEYS {
        plain
            .guard("order-create", &[&&*part, &k])
            .lease(LEASE)
            .ttl(DUP_TTL)
            .run(|| async { Ok::<_, idem::Error>(result()) })
            .await?;
    }
    let a = guarded(waited, false, true, Arc::clone(&part), DUP_KEYS, DUP_TTL);
    let b = guarded(plain, false, true, part, DUP_KEYS, DUP_TTL);
    Ok(sides(
        [keep(&pair, a), keep(&pair, b)],
        [
            "A idem WAIT 1 (a duplicate sends no WAIT)",
            "B idem without WAIT (native claim)",
        ],
    ))
}

/// A: a first call through idem with `WAIT 1` (claim, `WAIT`, complete,
/// `WAIT`). B: the same without `WAIT` (native claim, complete script).
pub(crate) async fn first(env: &Env) -> anyhow::Result<Vec<Side>> {
    let pair = Arc::new(Pair::start()?);
    let (plain, waited) = handles(env, &pair).await?;
    let tag = env.tag.as_str();
    let a = guarded(waited, false, false, format!("{tag}wa").into(), 0, TTL);
    let b = guarded(plain, false, false, format!("{tag}wb").into(), 0, TTL);
    Ok(sides(
        [keep(&pair, a), keep(&pair, b)],
        [
            "A idem WAIT 1 (claim, WAIT, complete, WAIT)",
            "B idem without WAIT (native claim + complete script)",
        ],
    ))
}
