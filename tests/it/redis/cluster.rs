//! The Redis Cluster store on test-owned clusters: the conformance suite, keys
//! spread over the masters, round trips on the owning master, a frozen master, a
//! failover.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idem::store::redis::{RedisClusterStore, RedisStore};
use idem::store::{Owned, Owner, Store, StoreError};
use idem::{Error, How, Idem};

use crate::redis::store::{claimed, store_operations};
use crate::support::redis_server::{Monitor, RedisCluster};

/// The store on a test-owned cluster, under the prefix `t:`.
async fn connect(cluster: &RedisCluster) -> RedisClusterStore {
    RedisClusterStore::builder(cluster.urls())
        .prefix("t:")
        .connect()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_store_semantics() {
    let cluster = RedisCluster::start();
    let store = connect(&cluster).await;
    assert!(store.verify().await.unwrap().is_empty());
    // The single-node store pointed at a cluster node says so at start-up.
    let single = RedisStore::connect(&cluster.nodes[0].url()).await.unwrap();
    let err = single.verify().await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Config(m) if m.contains("RedisClusterStore")),
        "{err:?}"
    );
    // Keys spread over all three masters, each record on the node of its hash tag.
    let store: Arc<dyn Store> = Arc::new(store);
    for i in 0..30 {
        let key = format!("spread:scene:{i}");
        let o = Owner::fresh();
        claimed(&*store, &key, o, Duration::from_secs(5)).await;
        assert_eq!(
            store
                .complete(&key, o, b"I1x", Duration::from_secs(5))
                .await
                .unwrap(),
            Owned::Applied
        );
    }
    let per_node: Vec<usize> = cluster
        .nodes
        .iter()
        .map(|n| n.cli(&["DBSIZE"]).trim().parse().unwrap())
        .collect();
    assert_eq!(per_node.iter().sum::<usize>(), 30);
    assert!(
        per_node.iter().all(|n| *n > 0),
        "records on every master: {per_node:?}"
    );
    store_operations(Arc::clone(&store)).await;

    // Round trips, counted on the master that owns the key's slot.
    let idem = Idem::builder()
        .shared_store(Arc::clone(&store))
        .namespace("c")
        .build()
        .unwrap();
    let owner_of = |key: &idem::Key| {
        let rk = format!("t:{{{key}}}");
        cluster
            .nodes
            .iter()
            .position(|n| n.cli(&["EXISTS", &rk]).trim().parse::<u8>().is_ok())
            .expect("one master owns the slot")
    };
    let node = owner_of(&idem.key("rt", &[&"a"]));
    let mut mon = Monitor::attach(cluster.nodes[node].port);
    let _ = mon.take();
    for (expect, how) in [
        (["EVALSHA", "EVALSHA"].as_slice(), How::Executed),
        (&["EVALSHA"], How::Replayed),
    ] {
        let out = idem
            .guard("rt", &[&"a"])
            .run_fenced(|_| async { Ok::<_, Error>(1u8) })
            .await
            .unwrap();
        assert_eq!(out.how(), how);
        assert_eq!(mon.take(), expect, "{how:?} with a fence on the cluster");
    }
    drop(mon);
    // Without a fence the claim is one native command on the owning master.
    let node = owner_of(&idem.key("rt", &[&"b"]));
    let mut mon = Monitor::attach(cluster.nodes[node].port);
    let _ = mon.take();
    for (expect, how) in [
        (["SET", "EVALSHA"].as_slice(), How::Executed),
        (&["SET"], How::Replayed),
    ] {
        let out = idem
            .guard("rt", &[&"b"])
            .run(|| async { Ok::<_, Error>(1u8) })
            .await
            .unwrap();
        assert_eq!(out.how(), how);
        assert_eq!(mon.take(), expect, "{how:?} without a fence on the cluster");
    }
    drop(mon);
    // A token: the issue's `SET`, then one take script on the master that
    // owns the token; a body that succeeds sends nothing more. (Thirty
    // consumes first load the script on every master.)
    let (idem, tokens) = (&idem, idem.tokens());
    let consume = |t: String| async move {
        idem.tokens()
            .consume("token:rt", &t)
            .run(|_| async { Ok::<_, Error>(()) })
            .await
    };
    for _ in 0..30 {
        let t = tokens.issue("token:rt", Duration::from_secs(60)).await;
        consume(t.unwrap().into_string()).await.unwrap();
    }
    let mut mons: Vec<Monitor> = cluster
        .nodes
        .iter()
        .map(|n| Monitor::attach(n.port))
        .collect();
    let idle = |m: &mut Monitor| {
        m.take()
            .into_iter()
            .filter(|c| c != "CLUSTER" && c != "PING")
    };
    for m in &mut mons {
        let _ = idle(m).count();
    }
    let t = tokens.issue("token:rt", Duration::from_secs(60)).await;
    consume(t.unwrap().into_string()).await.unwrap();
    let mut seen: Vec<String> = mons.iter_mut().flat_map(idle).collect();
    seen.sort();
    assert_eq!(seen, ["EVALSHA", "SET"], "a token's issue and consume");
    drop(mons);

    // A frozen master: calls on its slots fail within the operation budget, calls
    // on the other masters go on.
    let (mut frozen_key, mut live_key) = (None, None);
    for i in 0..200u32 {
        let k = idem.key("frozen", &[&i]);
        if owner_of(&k) == 0 {
            frozen_key.get_or_insert(i);
        } else {
            live_key.get_or_insert(i);
        }
    }
    let (frozen_key, live_key) = (frozen_key.unwrap(), live_key.unwrap());
    cluster.nodes[0].freeze();
    let t0 = std::time::Instant::now();
    let r = idem
        .guard("frozen", &[&frozen_key])
        .run(|| async { Ok::<_, Error>(()) })
        .await;
    let took = t0.elapsed();
    let live = idem
        .guard("frozen", &[&live_key])
        .run(|| async { Ok::<_, Error>(()) })
        .await;
    cluster.nodes[0].thaw();
    assert!(matches!(r, Err(Error::StoreUnavailable { .. })), "{r:?}");
    // The handle's default 1 s op timeout (the default 30 s lease does not clamp
    // it) bounds the call, whatever the client's response timeout; 1 s slack.
    let op_budget = Duration::from_secs(1);
    assert!(
        took < op_budget + Duration::from_secs(1),
        "unavailable within the timeout: {took:?}"
    );
    assert_eq!(
        live.unwrap().how(),
        How::Executed,
        "other masters keep working"
    );
}

/// A master with a replica is killed: the replica takes over, the client follows
/// the new topology, the record is replayed (or, had replication lagged, the body
/// runs again with a larger fence), and later claims keep getting larger fences.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_failover_keeps_fences_growing() {
    let mut cluster = RedisCluster::start_with_replicas(1);
    let store = RedisClusterStore::connect(cluster.urls()).await.unwrap();
    let idem = Idem::builder()
        .store(store)
        .namespace("fo")
        .build()
        .unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let call = || {
        let (idem, runs) = (idem.clone(), Arc::clone(&runs));
        async move {
            idem.guard("failover", &[&"k"])
                .run_fenced(|fence| async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, Error>(fence.get())
                })
                .await
        }
    };
    let first = call().await.unwrap();
    assert_eq!(first.how(), How::Executed);
    let key = idem.key("failover", &[&"k"]);
    let master = cluster.master_of(&format!("{{{key}}}"));
    // Give asynchronous replication its moment, then crash the master.
    let _ = cluster.nodes[master].cli(&["WAIT", "1", "1000"]);
    cluster.nodes[master].kill();

    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let after = loop {
        match call().await {
            Ok(o) => break o,
            Err(Error::StoreUnavailable { .. }) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{e:?}"),
        }
    };
    println!("after failover: {:?}", after.how());
    match after.how() {
        How::Replayed => {
            assert_eq!(after.fence(), first.fence());
            assert_eq!(after.value(), first.value());
            assert_eq!(runs.load(Ordering::SeqCst), 1);
        }
        How::Executed => assert!(after.fence() > first.fence(), "re-run after a lost record"),
        other => panic!("{other:?}"),
    }
    cluster.wait_ok(Duration::from_secs(10));
    assert!(idem.forget(&key).await.unwrap());
    let again = call().await.unwrap();
    assert_eq!(again.how(), How::Executed);
    assert!(
        again.fence() > after.fence(),
        "fences keep growing on the promoted replica"
    );
}

/// Every master forgot the scripts (a restart, `SCRIPT FLUSH`): the claim and
/// complete scripts are loaded again on the way (`NOSCRIPT`, `SCRIPT LOAD`,
/// the same command again), and the call runs once and replays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_reloads_forgotten_scripts() {
    let cluster = RedisCluster::start();
    let store = connect(&cluster).await;
    let idem = Idem::builder()
        .store(store)
        .namespace("reload")
        .build()
        .unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let call = |k: u32| {
        let runs = Arc::clone(&runs);
        idem.guard("reload", &[&k])
            .run_fenced(move |fence| async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Error>(fence.get())
            })
    };
    for k in 0..6u32 {
        for node in &cluster.nodes {
            assert_eq!(node.cli(&["SCRIPT", "FLUSH"]).trim(), "OK");
        }
        let first = call(k).await.unwrap();
        assert_eq!(first.how(), How::Executed, "key {k}");
        assert!(first.fence().is_valid());
        let again = call(k).await.unwrap();
        assert_eq!(again.how(), How::Replayed, "key {k}");
        assert_eq!(again.into_inner(), first.into_inner());
    }
    assert_eq!(runs.load(Ordering::SeqCst), 6);
}
