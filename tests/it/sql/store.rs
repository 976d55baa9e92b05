//! What the shared conformance suite (run on these stores by `sql_conformance`)
//! does not cover: the CI-size concurrency burst, purge, verify, DDL, garbage
//! rows, a real outage, the backstop on the same database, byte-exact keys and
//! several store instances on one set of tables (upkeep in `maintenance.rs`, error
//! paths in `errors.rs`). Each case is written once and instantiated per
//! database by `per_database!`.

use std::sync::Arc;
use std::time::Duration;

use idem::db::Dialect;
use idem::fingerprint::Fingerprint;
use idem::store::sql::SqlStore;
use idem::store::{Claim, ClaimRequest, Owned, Owner};
use idem::{Error, FaultyStore, Hooks, How, Idem, Store};
use tokio::sync::Barrier;

use crate::support::sql::{Biz, Fixture};

#[derive(Debug, thiserror::Error)]
pub(crate) enum AppErr {
    #[error("idem: {0}")]
    Idem(#[from] Error),
    #[error("db: {0}")]
    Db(#[from] sqlx::Error),
}

pub(crate) type Res<T> = Result<T, AppErr>;

pub(crate) fn handle(store: Arc<dyn Store>) -> Idem {
    Idem::builder()
        .shared_store(store)
        .namespace(format!("t-{}", crate::support::sql::suffix()))
        .op_timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

pub(crate) fn req(key: &str, owner: Owner, lease: Duration) -> ClaimRequest<'_> {
    ClaimRequest {
        key,
        owner,
        fingerprint: Fingerprint([7; 16]),
        lease,
    }
}

pub(crate) fn fence_of(c: &Claim) -> u64 {
    match c {
        Claim::Claimed { fence } => fence.get(),
        other => panic!("expected a claim, got {other:?}"),
    }
}

crate::support::sql::per_database!(
    concurrent_callers_many_keys,
    fences_increase_across_expiry_forget_purge,
    unavailable_fails_closed,
    degraded_backstop_same_database,
    garbage_row_is_codec,
);

/// One burst at a time: three databases' bursts (up to 3 × 50,000 callers under
/// `IDEM_STRESS=1`) side by side overload a 2-core machine.
static BURSTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn concurrent_callers_many_keys(d: Dialect) {
    let _one_at_a_time = BURSTS.lock().await;
    let keys = crate::support::sql::ci_keys(d);
    let callers = 50;
    let fx = Fixture::new(d).await;
    // The stress size checks one body per key at scale, not latency: 50,000
    // callers on a 2-core machine shared with the rest of the suite need more
    // than the 5 s per store operation of the CI size.
    let op_timeout = Duration::from_secs(if crate::support::sql::stress() { 60 } else { 5 });
    let idem = Idem::builder()
        .shared_store(fx.dyn_store())
        .namespace(format!("t-{}", crate::support::sql::suffix()))
        .op_timeout(op_timeout)
        .build()
        .unwrap();
    // Three operation timeouts: the lease / 3 clamp leaves each claim the whole
    // budget (with the former 10 s lease, SQLite claims got 3.3 s and failed at
    // load 17: issue 18).
    let lease = op_timeout * 3;
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // A claim may still fail closed (`StoreUnavailable`, no body run) when the
    // burst keeps SQLite's single writer busier than the op timeout (10,000
    // callers at load 20: issue 18). This test is about one body per key, so
    // such a caller does what a service would: it tries again once the breaker
    // (default 2 s cooldown) lets calls through, within its wait.
    let wait = Duration::from_secs(120).max(lease);
    let cooldown = Duration::from_secs(2);
    let fail_closed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let barrier = Arc::new(Barrier::new(keys * callers));
    let mut tasks = tokio::task::JoinSet::new();
    for k in 0..keys {
        for _ in 0..callers {
            let (idem, runs, barrier, fail_closed) = (
                idem.clone(),
                runs.clone(),
                barrier.clone(),
                fail_closed.clone(),
            );
            tasks.spawn(async move {
                barrier.wait().await;
                let give_up = std::time::Instant::now() + wait;
                loop {
                    let runs = runs.clone();
                    let r = idem
                        .guard("pay", &[&k])
                        .lease(lease)
                        .wait(wait)
                        .run_fenced(|fence| async move {
                            runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(300)).await;
                            Res::Ok((k, fence.get()))
                        })
                        .await;
                    match r {
                        Err(AppErr::Idem(Error::StoreUnavailable { .. }))
                            if std::time::Instant::now() < give_up =>
                        {
                            fail_closed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            tokio::time::sleep(cooldown).await;
                        }
                        r => return r.map(|o| (o.how(), o.into_inner())),
                    }
                }
            });
        }
    }
    let mut per_key = std::collections::HashMap::<usize, u64>::new();
    let mut waited = 0;
    while let Some(r) = tasks.join_next().await {
        let (how, (k, fence)) = r.unwrap().unwrap();
        if how == How::Waited {
            waited += 1;
        }
        // Every caller of a key sees the one execution's value.
        assert_eq!(*per_key.entry(k).or_insert(fence), fence, "key {k}");
    }
    assert_eq!(
        runs.load(std::sync::atomic::Ordering::SeqCst),
        keys,
        "one body per key"
    );
    assert_eq!(per_key.len(), keys);
    assert!(waited > 0, "waiters must have been observed");
    let st = idem.stats();
    assert_eq!(st.count("executed"), keys as u64);
    assert_eq!(
        st.count("executed") + st.count("waited") + st.count("replayed"),
        (keys * callers) as u64
    );
    println!(
        "concurrent_callers_many_keys({d:?}): {} claims failed closed and were tried again",
        fail_closed.load(std::sync::atomic::Ordering::SeqCst)
    );
}

async fn fences_increase_across_expiry_forget_purge(d: Dialect) {
    let fx = Fixture::new(d).await;
    let s = &fx.store;
    let short = Duration::from_secs(1);
    let mut last = 0;
    let mut next = |f: u64, what: &str| {
        assert!(f > last, "{what}: fence {f} after {last}");
        last = f;
    };
    let o = Owner::fresh();
    next(
        fence_of(&s.claim(req("f", o, short)).await.unwrap()),
        "first",
    );
    assert!(s.forget("f").await.unwrap());
    assert!(!s.forget("f").await.unwrap());
    let o = Owner::fresh();
    next(
        fence_of(&s.claim(req("f", o, short)).await.unwrap()),
        "after forget",
    );
    assert_eq!(
        s.complete("f", o, b"I1.....", short).await.unwrap(),
        Owned::Applied
    );
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert!(s.purge_expired().await.unwrap() >= 1);
    next(
        fence_of(&s.claim(req("f", Owner::fresh(), short)).await.unwrap()),
        "after purge",
    );
    tokio::time::sleep(Duration::from_millis(1300)).await;
    next(
        fence_of(&s.claim(req("f", Owner::fresh(), short)).await.unwrap()),
        "after expiry",
    );
    for i in 0..20 {
        assert!(s.forget("f").await.unwrap());
        next(
            fence_of(&s.claim(req("f", Owner::fresh(), short)).await.unwrap()),
            &format!("burst {i}"),
        );
    }
}

async fn unavailable_fails_closed(d: Dialect) {
    let fx = Fixture::new(d).await;
    let faulty = Arc::new(FaultyStore::new(fx.store.clone()));
    let idem = handle(faulty.clone());
    faulty.set_unavailable(true);
    let ran = std::sync::atomic::AtomicBool::new(false);
    let r = idem
        .guard("pay", &[&1u8])
        .run(|| {
            ran.store(true, std::sync::atomic::Ordering::SeqCst);
            async { Res::Ok(1) }
        })
        .await;
    assert!(
        matches!(r, Err(AppErr::Idem(Error::StoreUnavailable { .. }))),
        "{r:?}"
    );
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    // A real outage: a pool that cannot reach the server is Unavailable too.
    let dead = match d {
        Dialect::Postgres => SqlStore::postgres(
            sqlx::postgres::PgPoolOptions::new()
                .acquire_timeout(Duration::from_millis(300))
                .connect_lazy("postgres://postgres@127.0.0.1:1/test")
                .unwrap(),
        ),
        Dialect::MySql => SqlStore::mysql(
            sqlx::mysql::MySqlPoolOptions::new()
                .acquire_timeout(Duration::from_millis(300))
                .connect_lazy("mysql://root@127.0.0.1:1/test")
                .unwrap(),
        ),
        _ => return, // an embedded database has no server to lose
    };
    let e = dead
        .claim(req("k", Owner::fresh(), Duration::from_secs(1)))
        .await
        .unwrap_err();
    assert!(
        matches!(e, idem::store::StoreError::Unavailable(_)),
        "{e:?}"
    );
    // The sqlx error is the source, on the store's error and through the guard.
    let source = std::error::Error::source(&e).expect("the driver error as source");
    assert!(source.downcast_ref::<sqlx::Error>().is_some(), "{source:?}");
    let r = handle(Arc::new(dead))
        .guard("pay", &[&2u8])
        .run(|| async { Res::Ok(2) })
        .await;
    match r {
        Err(AppErr::Idem(e @ Error::StoreUnavailable { .. })) => {
            let source = std::error::Error::source(&e).expect("the driver error as source");
            assert!(source.downcast_ref::<sqlx::Error>().is_some(), "{source:?}");
        }
        other => panic!("{other:?}"),
    }
}

async fn degraded_backstop_same_database(d: Dialect) {
    let fx = Fixture::new(d).await;
    let biz = Biz::new(&fx).await;
    let faulty = Arc::new(FaultyStore::new(fx.store.clone()));
    let idem = handle(faulty.clone());
    faulty.set_unavailable(true);
    let barrier = Arc::new(Barrier::new(8));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (idem, biz, barrier) = (idem.clone(), biz.clone(), barrier.clone());
        tasks.spawn(async move {
            barrier.wait().await;
            let biz2 = biz.clone();
            let g = idem
                .guard("order", &[&"no-1"])
                .backstop(biz.index.clone())
                .degrade_to_backstop();
            g.run_with(
                Hooks::new()
                    .detect(idem::std_error)
                    .on_conflict(move || async move { Ok(biz2.find("no-1").await?) }),
                || async move { Res::Ok(biz.insert("no-1").await?) },
            )
            .await
        });
    }
    let mut ids = Vec::new();
    while let Some(r) = tasks.join_next().await {
        let out = r.unwrap().unwrap();
        assert!(
            matches!(out.how(), How::Degraded | How::Backstop),
            "{:?}",
            out.how()
        );
        ids.push(out.into_inner());
    }
    assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
    assert_eq!(biz.count().await, 1, "exactly one business row");
    assert_eq!(idem.stats().backstop_hits(), 7);
}

async fn garbage_row_is_codec(d: Dialect) {
    let fx = Fixture::new(d).await;
    let idem = handle(fx.dyn_store());
    let key = idem.key("junk", &[&1u8]);
    let (t, k) = (fx.records(), key.as_str());
    let sql = match d {
        Dialect::Postgres => format!(
            "INSERT INTO {t} VALUES ('{k}', 1, '\\x0102'::bytea, 5, '\\x00'::bytea, NULL, now() + interval '1 hour')"
        ),
        Dialect::MySql => format!(
            "INSERT INTO {t} VALUES ('{k}', 9, x'01', 5, x'00', NULL, UTC_TIMESTAMP(6) + INTERVAL 1 HOUR)"
        ),
        _ => format!(
            "INSERT INTO {t} VALUES ('{k}', 1, x'0102', 5, x'00', NULL, (unixepoch() + 3600) * 1000000)"
        ),
    };
    fx.exec(&sql).await;
    let e = fx.store.inspect(k).await.unwrap_err();
    assert!(matches!(e, idem::store::StoreError::Codec(_)), "{e:?}");
    let e = fx
        .store
        .claim(req(k, Owner::fresh(), Duration::from_secs(1)))
        .await
        .unwrap_err();
    assert!(matches!(e, idem::store::StoreError::Codec(_)), "{e:?}");
    let r = idem
        .guard_key(key.clone())
        .run(|| async { Res::Ok(1) })
        .await;
    assert!(matches!(r, Err(AppErr::Idem(Error::Codec { .. }))), "{r:?}");
}
