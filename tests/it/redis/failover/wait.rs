//! Replicated durability on a primary with one replica: a claim whose `WAIT`
//! times out is not trusted, a complete whose `WAIT` times out is counted, and
//! a Cluster store sends its `WAIT` to the master that took the write.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use idem::store::redis::{Durability, RedisClusterStore, RedisStore};
use idem::{Error, Hooks, Idem, Store};

use crate::observability::metrics::Captured;
use crate::support::redis_server::{RedisCluster, RedisServer};

const ONE: Durability = Durability::Replicated {
    replicas: 1,
    timeout: Duration::from_millis(100),
};

/// A primary and one replica in sync.
fn pair() -> (RedisServer, RedisServer) {
    let primary = RedisServer::start();
    let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &primary.port.to_string()]);
    wait_online(&primary, 1);
    (primary, replica)
}

fn wait_online(primary: &RedisServer, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while primary
        .cli(&["INFO", "replication"])
        .matches("state=online")
        .count()
        < n
    {
        assert!(Instant::now() < deadline, "replica not online");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The replica stops acknowledging: frozen, and its link dropped.
fn cut(primary: &RedisServer, replica: &RedisServer) {
    replica.freeze();
    primary.cli(&["CLIENT", "KILL", "TYPE", "replica"]);
}

fn handle(store: impl Store + 'static) -> Idem {
    Idem::builder()
        .store(store)
        .namespace(crate::support::unique_ns("wait"))
        .build()
        .unwrap()
}

/// The claim is released (nothing is left on the key), the call fails closed
/// without running the body, and once the replica is back the call runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_without_enough_replicas_is_released_and_fails_closed() {
    let _turn = super::turn().await;
    let (primary, replica) = pair();
    let store = RedisStore::builder(primary.url())
        .durability(ONE)
        .connect()
        .await
        .unwrap();
    let idem = handle(store.clone());
    let runs = Arc::new(AtomicUsize::new(0));
    let call = |key: &'static str| {
        let (idem, runs) = (idem.clone(), Arc::clone(&runs));
        async move {
            idem.guard("pay", &[&key])
                .run(|| async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, Error>(7u8)
                })
                .await
        }
    };
    assert_eq!(call("a").await.unwrap().into_inner(), 7);
    cut(&primary, &replica);
    let r = call("b").await;
    assert!(matches!(r, Err(Error::StoreUnavailable { .. })), "{r:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the body of b never ran");
    let key = idem.key("pay", &[&"b"]);
    let deadline = Instant::now() + Duration::from_secs(3);
    while store.inspect(key.as_str()).await.unwrap().is_some() {
        assert!(
            Instant::now() < deadline,
            "the untrusted claim was not released"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    replica.thaw();
    wait_online(&primary, 1);
    // The breaker may still be cooling down: retry until the call goes through.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match call("b").await {
            Ok(o) => break assert!(!o.is_replay()),
            Err(e) => assert!(Instant::now() < deadline, "{e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// Degraded to the backstop, the body runs while its untrusted claim stays on
/// the key: a duplicate that follows waits for it instead of running too, and
/// receives its value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_does_not_run_while_the_degraded_body_runs() {
    let _turn = super::turn().await;
    let (primary, replica) = pair();
    let store = RedisStore::builder(primary.url())
        .durability(ONE)
        .connect()
        .await
        .unwrap();
    let idem = handle(store);
    cut(&primary, &replica);
    let runs = Arc::new(AtomicUsize::new(0));
    let call = || {
        let (idem, runs) = (idem.clone(), Arc::clone(&runs));
        tokio::spawn(async move {
            idem.guard("ship", &[&"k"])
                .lease(Duration::from_secs(6))
                .backstop("uk_ship")
                .degrade_to_backstop()
                .run_fenced_with(Hooks::new().detect(idem::std_error), |_| async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                    Ok::<_, Error>(5u8)
                })
                .await
        })
    };
    let first = call();
    let deadline = Instant::now() + Duration::from_secs(5);
    while runs.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the degraded body never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let second = call().await.unwrap();
    let first = first.await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(first.unwrap().into_inner(), 5);
    let second = second.unwrap();
    assert!(second.is_replay(), "{:?}", second.how());
    assert_eq!(second.into_inner(), 5);
    drop(replica);
}

/// A complete acknowledged by no replica still returns the body's value and
/// is counted as `idem_store_unreplicated_total`.
#[test]
fn an_unreplicated_complete_is_counted_and_returned() {
    let (primary, replica) = pair();
    let rec = Captured::default();
    let runs = AtomicUsize::new(0);
    metrics::with_local_recorder(&rec, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let store = RedisStore::builder(primary.url())
                .durability(ONE)
                .connect()
                .await
                .unwrap();
            let idem = handle(store);
            let out = idem
                .guard("ack", &[&"k"])
                .run(|| async {
                    runs.fetch_add(1, Ordering::SeqCst);
                    // The claim was acknowledged; the complete will not be.
                    cut(&primary, &replica);
                    Ok::<_, Error>(9u8)
                })
                .await
                .unwrap();
            assert!(!out.is_replay());
            assert_eq!(out.into_inner(), 9);
        });
    });
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(
        rec.counter("idem_store_unreplicated_total{op=complete,store=redis}"),
        1
    );
}

/// In a cluster the `WAIT` reaches the master of the key's slot: with only
/// that master's replica frozen, exactly its keys' claims fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_waits_on_the_master_of_the_slot() {
    let _turn = super::turn().await;
    let cluster = RedisCluster::start_with_replicas(1);
    let store = RedisClusterStore::builder(cluster.urls())
        .durability(ONE)
        .connect()
        .await
        .unwrap();
    // No breaker: each key's answer must be its own master's.
    let idem = Idem::builder()
        .store(store.clone())
        .namespace(crate::support::unique_ns("wait"))
        .circuit_breaker(u32::MAX, Duration::from_millis(1))
        .build()
        .unwrap();
    let master_of = |k: u32| {
        let rk = store.record_key(idem.key("c", &[&k]).as_str());
        cluster.master_of(&String::from_utf8(rk).unwrap())
    };
    let run = |k: u32| {
        let idem = idem.clone();
        async move {
            idem.guard("c", &[&k])
                .run(|| async { Ok::<_, Error>(()) })
                .await
        }
    };
    for k in 0..6 {
        run(k).await.unwrap();
    }
    let m = master_of(0);
    let port = cluster.nodes[m].port;
    let replica = cluster
        .nodes
        .iter()
        .position(|n| {
            n.cli(&["INFO", "replication"])
                .contains(&format!("master_port:{port}"))
        })
        .expect("the master has a replica");
    cut(&cluster.nodes[m], &cluster.nodes[replica]);
    let mut failed = 0;
    for k in 100..124u32 {
        let on_m = master_of(k) == m;
        match run(k).await {
            Ok(_) => assert!(!on_m, "key {k} on the cut master was trusted"),
            Err(Error::StoreUnavailable { .. }) => {
                assert!(on_m, "key {k} elsewhere failed");
                failed += 1;
            }
            Err(e) => panic!("{e}"),
        }
    }
    cluster.nodes[replica].thaw();
    assert!(failed > 0, "no key landed on the cut master");
}

/// A primary with `min-replicas-to-write 1` and no replica in reach refuses
/// the claim (`NOREPLICAS`): an outage, so a call that may degrade runs its
/// body under the backstop, and one that may not fails closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_replicas_to_write_is_an_outage() {
    let _turn = super::turn().await;
    let primary = RedisServer::start_with(&["--min-replicas-to-write", "1"]);
    let idem = handle(RedisStore::connect(&primary.url()).await.unwrap());
    let runs = Arc::new(AtomicUsize::new(0));
    for degrade in [false, true] {
        let runs2 = Arc::clone(&runs);
        let mut guard = idem.guard("norep", &[&degrade]).backstop("uk_norep");
        if degrade {
            guard = guard.degrade_to_backstop();
        }
        let r = guard
            .run_fenced_with(Hooks::new().detect(idem::std_error), |_| async move {
                runs2.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Error>(1u8)
            })
            .await;
        match (degrade, r) {
            (false, Err(Error::StoreUnavailable { .. })) => {}
            (true, Ok(o)) => assert_eq!(o.into_inner(), 1),
            (d, r) => panic!("degrade {d}: {r:?}"),
        }
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(idem.stats().count("degraded"), 1);
}
