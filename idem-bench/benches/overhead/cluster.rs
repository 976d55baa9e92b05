//! Redis Cluster (with `--cluster`): the guard on `RedisClusterStore` against
//! the native floor by hand on the same cluster connection, and idem's fenced
//! path. The benchmark starts three masters of its own on spare ports (no
//! replicas, nothing persisted) and kills them at the end; each call goes to the
//! master that owns its key's slot, so A and B pay the same routing. The peers
//! have no cluster client, so they are not in these rows.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idem::store::redis::__bench;
use idem::store::redis::RedisClusterStore;
use idem::store::redis::redis::Script;

use crate::Env;
use crate::harness::Side;
use crate::redis::{
    DUP_KEYS, DUP_TTL, LEASE, PREFIX, TTL, dup_floor, first_by_hand, guarded, result, sides,
};

/// Three cluster masters on spare ports, killed (and their directories removed) on drop.
pub(crate) struct Cluster {
    nodes: Vec<(u16, Child, PathBuf)>,
}

impl Cluster {
    /// Starts the nodes, on another set of ports when one does not come up (a
    /// port taken since it was chosen).
    pub(crate) fn start() -> anyhow::Result<Cluster> {
        let mut last = anyhow::anyhow!("no attempt");
        for _ in 0..5 {
            match Self::start_once() {
                Ok(c) => return Ok(c),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn start_once() -> anyhow::Result<Cluster> {
        // Below the kernel's ephemeral range (32768 and up), bus ports (+10000) too:
        // a client connection elsewhere on the machine cannot hold them.
        let base = 12_000 + (crate::rand_u64() % 10_000) as u16;
        let mut c = Cluster { nodes: Vec::new() };
        for port in base..base + 3 {
            let dir = std::env::temp_dir().join(format!("idem-bench-cluster-{port}"));
            std::fs::create_dir_all(&dir)?;
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args([
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--cluster-enabled",
                    "yes",
                ])
                .args(["--cluster-config-file", "nodes.conf", "--dir"])
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            c.nodes.push((port, child, dir));
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while c
            .nodes
            .iter()
            .any(|(p, _, _)| cli(*p, &["PING"]).trim() != "PONG")
        {
            anyhow::ensure!(Instant::now() < deadline, "cluster nodes did not start");
            anyhow::ensure!(
                c.nodes
                    .iter_mut()
                    .all(|(_, child, _)| matches!(child.try_wait(), Ok(None))),
                "a cluster node exited (port taken?)"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let addrs: Vec<String> = c
            .nodes
            .iter()
            .map(|(p, _, _)| format!("127.0.0.1:{p}"))
            .collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        while !c
            .nodes
            .iter()
            .all(|(p, _, _)| cli(*p, &["CLUSTER", "INFO"]).contains("cluster_state:ok"))
        {
            anyhow::ensure!(
                Instant::now() < deadline + Duration::from_secs(20),
                "cluster not ok"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(c)
    }

    pub(crate) fn urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|(p, _, _)| format!("redis://127.0.0.1:{p}"))
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for (_, child, dir) in &mut self.nodes {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn cli(port: u16, args: &[&str]) -> String {
    Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

pub(crate) async fn handle(env: &Env) -> anyhow::Result<(idem::Idem, RedisClusterStore)> {
    let urls = env
        .cluster
        .clone()
        .ok_or_else(|| anyhow::anyhow!("no cluster"))?;
    let store = RedisClusterStore::builder(urls)
        .prefix(PREFIX)
        .connect()
        .await?;
    let idem = idem::Idem::builder()
        .store(store.clone())
        .namespace(env.ns.clone())
        .build()?;
    Ok((idem, store))
}

/// A: idem without a fence, B: the native floor by hand, C: idem with a fence.
pub(crate) async fn duplicate(env: &Env) -> anyhow::Result<Vec<Side>> {
    let (idem, store) = handle(env).await?;
    for k in 0..DUP_KEYS {
        idem.guard("order-create", &[&"dup", &k])
            .lease(LEASE)
            .ttl(DUP_TTL)
            .run(|| async { Ok::<_, idem::Error>(result()) })
            .await?;
    }
    let dup: Arc<str> = "dup".into();
    let a = guarded(
        idem.clone(),
        false,
        true,
        Arc::clone(&dup),
        DUP_KEYS,
        DUP_TTL,
    );
    let b = dup_floor(store.connection(), env.ns.as_str().into());
    let c = guarded(idem, true, true, dup, DUP_KEYS, DUP_TTL);
    Ok(sides(
        [a, b, c],
        [
            "A idem (no fence: SET NX PX GET)",
            "B native floor: SET NX PX GET by hand",
            "C idem with fence (claim script)",
        ],
    ))
}

/// A: idem without a fence, B: the native floor (`SET NX PX GET` + `SET XX`),
/// C: idem with a fence, F: A's round trips by hand.
pub(crate) async fn first(env: &Env) -> anyhow::Result<Vec<Side>> {
    let (idem, store) = handle(env).await?;
    let tag = env.tag.as_str();
    let ns: Arc<str> = env.ns.as_str().into();
    let a = guarded(idem.clone(), false, false, format!("{tag}a").into(), 0, TTL);
    let b = first_by_hand(store.connection(), Arc::clone(&ns), format!("{tag}b"), None);
    let c = guarded(idem, true, false, format!("{tag}c").into(), 0, TTL);
    let complete = Some(Arc::new(Script::new(__bench::COMPLETE)));
    let f = first_by_hand(store.connection(), ns, format!("{tag}f"), complete);
    Ok(sides(
        [a, b, c, f],
        [
            "A idem (no fence: SET NX PX GET + complete script)",
            "B native floor: SET NX PX GET + SET XX by hand",
            "C idem with fence (claim + complete scripts)",
            "F A's round trips by hand",
        ],
    ))
}
