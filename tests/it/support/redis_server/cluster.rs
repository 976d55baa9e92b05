//! A Redis Cluster of test-owned `redis-server` processes (a child module, so
//! it starts its nodes through the parent's private spawning code).

use std::process::Command;
use std::time::{Duration, Instant};

use super::RedisServer;

/// Three masters (no replicas) started with `--cluster-enabled yes`.
#[derive(Debug)]
pub(crate) struct RedisCluster {
    pub(crate) nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Three masters, no replicas.
    pub(crate) fn start() -> Self {
        Self::start_with_replicas(0)
    }

    /// Three masters with `replicas` replicas each (node timeout 1 s, so a killed
    /// master's replica takes over within a few seconds).
    pub(crate) fn start_with_replicas(replicas: usize) -> Self {
        let nodes: Vec<RedisServer> = (0..3 * (1 + replicas))
            .map(|_| {
                RedisServer::start_inner(
                    &[
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "1000",
                    ],
                    true,
                )
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .expect("redis-cli --cluster create");
        assert!(
            out.status.success(),
            "cluster create failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let c = RedisCluster { nodes };
        c.wait_ok(Duration::from_secs(20));
        if replicas > 0 {
            // Replicas report in once they synced with their master (a full
            // sync can take long while the rest of the suite loads the machine).
            let deadline = Instant::now() + Duration::from_secs(60);
            while c.nodes.iter().any(|n| {
                let info = n.cli(&["INFO", "replication"]);
                info.contains("role:slave") && !info.contains("master_link_status:up")
            }) {
                assert!(Instant::now() < deadline, "replicas not synced within 60 s");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        c
    }

    /// Waits until every running node reports `cluster_state:ok`.
    pub(crate) fn wait_ok(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let ok = self
                .nodes
                .iter()
                .filter(|n| n.child.is_some())
                .all(|n| n.cli(&["CLUSTER", "INFO"]).contains("cluster_state:ok"));
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "cluster not ok within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The index of the master serving `redis_key`'s slot.
    pub(crate) fn master_of(&self, redis_key: &str) -> usize {
        self.nodes
            .iter()
            .position(|n| {
                n.child.is_some()
                    && n.cli(&["INFO", "replication"]).contains("role:master")
                    && n.cli(&["EXISTS", redis_key]).trim().parse::<u8>().is_ok()
            })
            .expect("a master serves the slot")
    }

    pub(crate) fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }
}

/// One cluster for the whole test process (the conformance suite makes a store per
/// test). Statics are never dropped, so each node gets a watchdog that kills it
/// when this process exits.
pub(crate) fn process_cluster() -> &'static RedisCluster {
    static CLUSTER: std::sync::OnceLock<RedisCluster> = std::sync::OnceLock::new();
    CLUSTER.get_or_init(|| {
        let c = RedisCluster::start();
        for n in &c.nodes {
            n.die_with_this_process();
        }
        c
    })
}
