//! Flash-sale bursts (issue 20): thousands of simultaneous callers, most of them
//! duplicates, against a healthy store. They queue in the client's send queue
//! and all finish: one body per key, every caller gets its key's value, the
//! store never reports an outage (so the circuit breaker never counts a
//! failure), and the queueing is visible. A caller that cannot get a turn
//! within its own budget gets `Error::Overloaded`, never `StoreUnavailable`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idem::store::redis::{RedisClusterStore, RedisStore};
use idem::store::{
    BoxFuture, Claim, ClaimRequest, Owned, Owner, RecordState, SendQueue, StoreError, Warning,
};
use idem::{Error, Store};
use tokio::sync::Barrier;

use crate::conformance::suite::BURST_OP_TIMEOUT;
use crate::observability::metrics::Captured;
use crate::support::redis_server::{RedisServer, SharedPrefix, process_cluster};
use crate::support::{AppError, Counter, unique_ns};

/// A real store, watched: counts the outages it reported to the execution layer
/// (the only failures the circuit breaker counts).
struct Watched {
    inner: Arc<dyn Store>,
    unavailable: AtomicUsize,
}

impl Watched {
    fn note<'a, T: Send + 'a>(
        &'a self,
        f: BoxFuture<'a, Result<T, StoreError>>,
    ) -> BoxFuture<'a, Result<T, StoreError>> {
        Box::pin(async move {
            let r = f.await;
            if matches!(r, Err(StoreError::Unavailable(_))) {
                self.unavailable.fetch_add(1, Ordering::Relaxed);
            }
            r
        })
    }
}

impl Store for Watched {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn claim<'a>(&'a self, req: ClaimRequest<'a>) -> BoxFuture<'a, Result<Claim, StoreError>> {
        self.note(self.inner.claim(req))
    }
    fn complete<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        payload: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        self.note(self.inner.complete(key, owner, payload, ttl))
    }
    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        self.note(self.inner.release(key, owner))
    }
    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        self.note(self.inner.renew(key, owner, lease))
    }
    fn inspect<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecordState>, StoreError>> {
        self.note(self.inner.inspect(key))
    }
    fn forget<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.note(self.inner.forget(key))
    }
    fn purge_expired(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.note(self.inner.purge_expired())
    }
    fn verify(&self) -> BoxFuture<'_, Result<Vec<Warning>, StoreError>> {
        self.inner.verify()
    }
    fn send_queue(&self) -> Option<&SendQueue> {
        self.inner.send_queue()
    }
}

/// Callers of the burst tests: 2,000 (100 keys × 20, 95% duplicates), or
/// 10,000 (100 × 100) under `IDEM_STRESS=1`.
fn per_key() -> usize {
    if std::env::var_os("IDEM_STRESS").is_some() {
        100
    } else {
        20
    }
}

/// `keys` × `per_key` callers behind one barrier on `store` (whose send queue
/// is much smaller than the burst): the burst must queue, and must not fail
/// closed.
async fn burst_finishes(store: Arc<dyn Store>, keys: usize, per_key: usize) {
    let limit = store
        .send_queue()
        .expect("a store with a send queue")
        .limit();
    assert!(limit < keys * per_key / 10, "the burst must queue");
    let watched = Arc::new(Watched {
        inner: store,
        unavailable: AtomicUsize::new(0),
    });
    let idem = idem::Idem::builder()
        .shared_store(watched.clone())
        .namespace(unique_ns("burst"))
        .op_timeout(BURST_OP_TIMEOUT)
        .build()
        .expect("valid handle");
    let runs: Vec<Counter> = (0..keys).map(|_| Counter::default()).collect();
    let barrier = Arc::new(Barrier::new(keys * per_key));
    let mut tasks = tokio::task::JoinSet::new();
    for (k, counter) in runs.iter().enumerate() {
        for _ in 0..per_key {
            let (idem, counter, barrier) = (idem.clone(), counter.clone(), barrier.clone());
            tasks.spawn(async move {
                barrier.wait().await;
                idem.guard("flash", &[&k])
                    .lease(Duration::from_secs(30))
                    .wait(Duration::from_secs(60))
                    .run(|| async move {
                        counter.hit();
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        Ok::<_, AppError>(k)
                    })
                    .await
                    .map(|o| (k, o.into_inner()))
            });
        }
    }
    for r in tasks.join_all().await {
        let (k, v) = r.expect("every caller is served: no StoreUnavailable, no Overloaded");
        assert_eq!(k, v, "each caller gets its own key's value");
    }
    for (k, c) in runs.iter().enumerate() {
        assert_eq!(c.get(), 1, "key {k} executed {} times", c.get());
    }
    let stats = idem.stats();
    assert_eq!(stats.count("executed") as usize, keys);
    assert!(stats.count("waited") > 0, "waiters were observed");
    assert_eq!(
        watched.unavailable.load(Ordering::Relaxed),
        0,
        "a healthy store reported an outage: the breaker counted it"
    );
    let queue = watched.send_queue().unwrap();
    assert!(queue.queued_total() > 0, "the burst queued in the client");
    assert_eq!((queue.waiting(), queue.in_flight()), (0, 0));
    println!(
        "burst of {}: {} operations queued for a turn (limit {limit})",
        keys * per_key,
        queue.queued_total()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_burst_queues_and_finishes() {
    let prefix = SharedPrefix::new();
    let store = RedisStore::builder(crate::support::redis_server::SHARED_URL)
        .prefix(prefix.0.clone())
        .connections(1)
        .max_in_flight(8)
        .connect()
        .await
        .expect("shared Redis at 127.0.0.1:6379 must be running");
    burst_finishes(Arc::new(store), 100, per_key()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_cluster_burst_queues_and_finishes() {
    let store = RedisClusterStore::builder(process_cluster().urls())
        .connections(1)
        .max_in_flight(8)
        .connect()
        .await
        .expect("test-owned cluster");
    burst_finishes(Arc::new(store), 100, per_key()).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_burst_queues_and_finishes() {
    let dir = crate::support::tempdir::TempDir::new();
    let store = idem::sql::SqlStore::open(dir.path().join("idem.db"))
        .await
        .unwrap();
    store.migrate().await.unwrap();
    // 4 connections, 2 operations in flight each: 8 turns for 2,000 callers.
    burst_finishes(Arc::new(store), 100, per_key()).await;
}

/// A caller that cannot get a turn within its wait is told the store is
/// overloaded; the caller holding the turn, whose answer is slow but comes,
/// succeeds; the breaker stays closed; the wait and the give-up are measured.
#[test]
fn a_caller_without_a_turn_in_its_budget_is_overloaded_not_unavailable() {
    let server = RedisServer::start();
    let rec = Captured::default();
    metrics::with_local_recorder(&rec, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(overloaded(&server));
    });
    assert_eq!(
        rec.counter("idem_store_overloaded_total{op=claim,store=redis}"),
        1
    );
    assert!(rec.samples("idem_store_queue_seconds{op=claim,store=redis}") >= 1);
    assert_eq!(
        rec.counter("idem_store_errors_total{op=claim,store=redis}"),
        0
    );
}

async fn overloaded(server: &RedisServer) {
    let store = RedisStore::builder(server.url())
        .connections(1)
        .max_in_flight(1)
        .connect()
        .await
        .unwrap();
    let idem = idem::Idem::builder()
        .store(store)
        .namespace(unique_ns("overload"))
        .op_timeout(Duration::from_secs(6))
        .build()
        .unwrap();
    let (runs_a, runs_b) = (Counter::default(), Counter::default());
    // The server holds every answer for 3 s (it is ours: nobody else waits):
    // the first caller's claim takes the only turn and waits for its answer.
    assert_eq!(server.cli(&["CLIENT", "PAUSE", "3000", "ALL"]).trim(), "OK");
    let started = std::time::Instant::now();
    let a = idem
        .guard("flash", &[&"a"])
        .lease(Duration::from_secs(20))
        .run(|| {
            let runs = runs_a.clone();
            async move {
                runs.hit();
                Ok::<_, AppError>("a".to_owned())
            }
        });
    let b = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        idem.guard("flash", &[&"b"])
            .lease(Duration::from_secs(20))
            .wait(Duration::from_millis(300))
            .run(|| {
                let runs = runs_b.clone();
                async move {
                    runs.hit();
                    Ok::<_, AppError>("b".to_owned())
                }
            })
            .await
    };
    let (a, b) = tokio::join!(a, b);
    assert_eq!(a.unwrap().into_inner(), "a", "the slow answer came in time");
    match b {
        Err(AppError::Idem(Error::Overloaded { key, store, .. })) => {
            assert!(key.contains("flash"), "{key}");
            assert_eq!(store, "redis");
        }
        other => panic!("expected Error::Overloaded, got {other:?}"),
    }
    assert!(
        started.elapsed() >= Duration::from_millis(2500),
        "the pause held the first answer"
    );
    assert_eq!((runs_a.get(), runs_b.get()), (1, 0));
    // Not an outage: the breaker let the next call through at once.
    let again = idem
        .guard("flash", &[&"b"])
        .lease(Duration::from_secs(20))
        .run(|| {
            let runs = runs_b.clone();
            async move {
                runs.hit();
                Ok::<_, AppError>("b".to_owned())
            }
        })
        .await
        .unwrap();
    assert_eq!((again.into_inner(), runs_b.get()), ("b".to_owned(), 1));
}
