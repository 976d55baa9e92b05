//! A Redis Cluster with one replica per master through a failover that loses
//! acknowledged writes, in each durability mode.
//!
//! One master's replica lags (SIGSTOP, and its link dropped by the master);
//! keys first called then live on that master only; the master is SIGKILLed
//! and its replica thawed, and the cluster promotes it (node timeout 1 s).
//! Keys on the other masters are untouched by the failover.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem::store::redis::{Durability, RedisClusterStore};

use super::drill::{Drill, Size, report};
use crate::support::redis_server::RedisCluster;

/// The index of `master`'s replica.
fn replica_of(cluster: &RedisCluster, master: usize) -> usize {
    let port = format!("master_port:{}", cluster.nodes[master].port);
    cluster
        .nodes
        .iter()
        .position(|n| n.cli(&["INFO", "replication"]).contains(&port))
        .expect("the master has a replica")
}

async fn drill(mode: &str, durability: Durability) -> (u64, u64, u64) {
    let _turn = super::turn().await;
    let mut cluster = RedisCluster::start_with_replicas(1);
    let store = RedisClusterStore::builder(cluster.urls())
        .durability(durability)
        .connect()
        .await
        .unwrap();
    let drill = Arc::new(Drill::new(Arc::new(store.clone())).await);
    let size = Size::pick();
    let across = size.before..size.before + size.across;
    let on = |cluster: &RedisCluster, key: &str| {
        cluster.master_of(&String::from_utf8(store.record_key(key)).unwrap())
    };
    drill.round(0..size.before).await;
    // The master of the first key called across the failover fails.
    let m = on(&cluster, &drill.order_key(across.start));
    let r = replica_of(&cluster, m);
    let lost = across
        .clone()
        .filter(|&k| on(&cluster, &drill.order_key(k)) == m)
        .count() as u64;
    let probes: Vec<u32> = (1..=1000)
        .filter(|&p| on(&cluster, &drill.probe_key(p)) == m)
        .take(20)
        .collect();
    tokio::time::sleep(Duration::from_millis(1200)).await; // replicas acknowledge every second
    cluster.nodes[r].freeze();
    cluster.nodes[m].cli(&["CLIENT", "KILL", "TYPE", "replica"]);
    drill.round(across.clone()).await;
    let killed = Instant::now();
    cluster.nodes[m].kill();
    cluster.nodes[r].thaw();
    // The failed master restarts (keeping its node configuration) and rejoins
    // as a replica of its successor once the cluster is ok again.
    tokio::task::block_in_place(|| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !cluster.nodes[r].cli(&["ROLE"]).starts_with("master") {
            assert!(Instant::now() < deadline, "no promotion in 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        cluster.nodes[m].restart();
    });
    let recovery = drill.recovered(killed, |p| probes.contains(&p)).await;
    for _ in 0..size.repeats {
        drill.round(0..across.end).await;
    }
    let (plain, backed) = (drill.count(false).await, drill.count(true).await);
    report("cluster", mode, size, plain, backed, recovery);
    assert_eq!(backed.extra_rows, 0, "{backed:?}");
    assert_eq!(plain.extra_rows, plain.extra_runs, "{plain:?}");
    (lost, plain.extra_runs, plain.errors)
}

/// No `WAIT`: the keys the failed master held alone run a second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_failover_without_wait_runs_lost_keys_again() {
    let (lost, extra, errors) = drill("no WAIT", Durability::Primary).await;
    assert!(lost > 0);
    assert_eq!((extra, errors), (lost, 0));
}

/// `WAIT 1`: the failed master's claims were not trusted while its replica
/// lagged; nothing runs twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_failover_wait_1_runs_nothing_twice() {
    let durability = Durability::Replicated {
        replicas: 1,
        timeout: Duration::from_millis(100),
    };
    let (lost, extra, errors) = drill("WAIT 1", durability).await;
    assert_eq!(extra, 0);
    assert!(errors >= lost, "{errors} errors for {lost} untrusted keys");
}
