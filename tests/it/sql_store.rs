//! The store semantics on PostgreSQL, MariaDB and SQLite: each case is written
//! once and instantiated per database by `sql_cases!`.

use std::sync::Arc;
use std::time::Duration;

use idem::fingerprint::Fingerprint;
use idem::store::sql::{Dialect, SqlStore, TableNames, ddl};
use idem::store::{Claim, ClaimRequest, Owned, Owner, RecordState};
use idem::{Concurrency, Error, FaultyStore, Hooks, How, Idem, Store, Terminal};
use tokio::sync::Barrier;

use crate::sql_support::{Biz, Fixture};

#[derive(Debug, thiserror::Error, serde::Serialize, serde::Deserialize)]
enum AppErr {
    #[error("idem: {0}")]
    #[serde(skip)]
    Idem(#[from] Error),
    #[error("db: {0}")]
    #[serde(skip)]
    Db(#[from] sqlx::Error),
    #[error("refused: {0}")]
    Refused(String),
    #[error("flaky")]
    Flaky,
}

type Res<T> = Result<T, AppErr>;

fn handle(store: Arc<dyn Store>) -> Idem {
    Idem::builder()
        .shared_store(store)
        .namespace(format!("t-{}", crate::sql_support::suffix()))
        .op_timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

fn req(key: &str, owner: Owner, lease: Duration) -> ClaimRequest<'_> {
    ClaimRequest {
        key,
        owner,
        fingerprint: Fingerprint([7; 16]),
        lease,
    }
}

fn fence_of(c: &Claim) -> u64 {
    match c {
        Claim::Claimed { fence } => fence.get(),
        other => panic!("expected a claim, got {other:?}"),
    }
}

macro_rules! sql_cases {
    ($($case:ident),* $(,)?) => {
        mod postgres { $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() { super::$case(idem::store::sql::Dialect::Postgres).await }
        )* }
        mod mariadb { $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() { super::$case(idem::store::sql::Dialect::MySql).await }
        )* }
        mod sqlite { $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() { super::$case(idem::store::sql::Dialect::Sqlite).await }
        )* }
    };
}

sql_cases!(
    sequential_repeats_run_once,
    concurrent_callers_many_keys,
    fail_then_retry,
    payload_mismatch,
    lease_takeover_after_crash,
    lost_replies_same_owner,
    cancelled_waiter_leaves_nothing,
    cancelled_after_start_keeps_claim,
    fences_increase_across_expiry_forget_purge,
    unavailable_fails_closed,
    degraded_backstop_one_row,
    terminal_error_replayed,
    version_mismatch_is_codec,
    garbage_row_is_codec,
    purge_removes_only_expired,
    verify_names_missing_table,
    ddl_applies_cleanly,
);

async fn sequential_repeats_run_once(d: Dialect) {
    let fx = Fixture::new(d).await;
    let idem = handle(fx.dyn_store());
    let runs = std::sync::atomic::AtomicUsize::new(0);
    let mut fences = Vec::new();
    for i in 0..10 {
        let out = idem
            .guard("order-create", &[&42u64, &"req-1"])
            .run(|fence| {
                let n = runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async move { Res::Ok(format!("order-{n}@{fence}")) }
            })
            .await
            .unwrap();
        assert_eq!(
            out.how(),
            if i == 0 { How::Executed } else { How::Replayed }
        );
        assert!(out.value().starts_with("order-0@"));
        fences.push(out.fence());
    }
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(fences.iter().all(|f| *f == fences[0] && f.is_valid()));
    assert_eq!(idem.stats().count("replayed"), 9);
}

async fn concurrent_callers_many_keys(d: Dialect) {
    let keys = crate::sql_support::ci_keys(d);
    let callers = 50;
    let fx = Fixture::new(d).await;
    let idem = handle(fx.dyn_store());
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let barrier = Arc::new(Barrier::new(keys * callers));
    let mut tasks = tokio::task::JoinSet::new();
    for k in 0..keys {
        for _ in 0..callers {
            let (idem, runs, barrier) = (idem.clone(), runs.clone(), barrier.clone());
            tasks.spawn(async move {
                barrier.wait().await;
                let g = idem
                    .guard("pay", &[&k])
                    .lease(Duration::from_secs(10))
                    .wait(Duration::from_secs(30));
                g.run(|fence| async move {
                    runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    Res::Ok((k, fence.get()))
                })
                .await
                .map(|o| (o.how(), o.into_inner()))
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
}

async fn fail_then_retry(d: Dialect) {
    let fx = Fixture::new(d).await;
    let idem = handle(fx.dyn_store());
    let first = idem
        .guard("refund", &[&"r-1"])
        .run(|_| async { Res::<String>::Err(AppErr::Flaky) })
        .await;
    assert!(matches!(first, Err(AppErr::Flaky)));
    let key = idem.key("refund", &[&"r-1"]);
    assert_eq!(
        idem.inspect(&key).await.unwrap(),
        None,
        "a failed body releases its claim"
    );
    let second = idem
        .guard("refund", &[&"r-1"])
        .run(|_| async { Res::Ok("refunded".to_owned()) })
        .await
        .unwrap();
    assert_eq!(second.how(), How::Executed);
    assert_eq!(second.into_inner(), "refunded");
}

async fn payload_mismatch(d: Dialect) {
    let fx = Fixture::new(d).await;
    let idem = handle(fx.dyn_store());
    idem.guard("order", &[&1u8])
        .fingerprint(&("sku-1", 2))
        .run(|_| async { Res::Ok(1) })
        .await
        .unwrap();
    let ran = std::sync::atomic::AtomicBool::new(false);
    let r = idem
        .guard("order", &[&1u8])
        .fingerprint(&("sku-1", 3))
        .run(|_| {
            ran.store(true, std::sync::atomic::Ordering::SeqCst);
            async { Res::Ok(2) }
        })
        .await;
    assert!(
        matches!(r, Err(AppErr::Idem(Error::PayloadMismatch { .. }))),
        "{r:?}"
    );
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
}

async fn lease_takeover_after_crash(d: Dialect) {
    let fx = Fixture::new(d).await;
    let s = &fx.store;
    let (a, b) = (Owner::random(), Owner::random());
    let fa = fence_of(&s.claim(req("k", a, Duration::from_secs(1))).await.unwrap());
    // A retried claim of A (lost reply) is still A's, with the same fence.
    assert_eq!(
        fence_of(&s.claim(req("k", a, Duration::from_secs(1))).await.unwrap()),
        fa
    );
    assert!(matches!(
        s.claim(req("k", b, Duration::from_secs(1))).await.unwrap(),
        Claim::Busy { .. }
    ));
    // A "crashes": no renewal, the lease lapses.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let fb = fence_of(&s.claim(req("k", b, Duration::from_secs(5))).await.unwrap());
    assert!(fb > fa, "takeover fence {fb} must exceed {fa}");
    assert_eq!(
        s.complete("k", a, b"late", Duration::from_secs(60))
            .await
            .unwrap(),
        Owned::NotOwner
    );
    assert_eq!(s.release("k", a).await.unwrap(), Owned::NotOwner);
    assert_eq!(
        s.renew("k", a, Duration::from_secs(5)).await.unwrap(),
        Owned::NotOwner
    );
    assert_eq!(
        s.renew("k", b, Duration::from_secs(5)).await.unwrap(),
        Owned::Applied
    );
    assert_eq!(
        s.complete("k", b, b"I1xxxxx", Duration::from_secs(60))
            .await
            .unwrap(),
        Owned::Applied
    );
    // Idempotent per owner: B's retried complete changes nothing and says Applied.
    assert_eq!(
        s.complete("k", b, b"other", Duration::from_secs(60))
            .await
            .unwrap(),
        Owned::Applied
    );
    match s
        .claim(req("k", Owner::random(), Duration::from_secs(1)))
        .await
        .unwrap()
    {
        Claim::Done(rec) => {
            assert_eq!(rec.payload, b"I1xxxxx");
            assert_eq!(rec.fence.get(), fb);
            assert_eq!(rec.owner, b);
        }
        other => panic!("expected Done, got {other:?}"),
    }
    // A finished record is not released by its owner.
    assert_eq!(s.release("k", b).await.unwrap(), Owned::NotOwner);
}

async fn lost_replies_same_owner(d: Dialect) {
    let fx = Fixture::new(d).await;
    let faulty = FaultyStore::new(fx.store.clone());
    let me = Owner::random();
    let lease = Duration::from_secs(5);
    faulty.lose_next_replies(1);
    assert!(faulty.claim(req("k", me, lease)).await.is_err());
    let f = fence_of(&faulty.claim(req("k", me, lease)).await.unwrap());
    faulty.lose_next_replies(1);
    assert!(faulty.release("k", me).await.is_err());
    assert_eq!(
        faulty.release("k", me).await.unwrap(),
        Owned::Applied,
        "released already: Applied"
    );
    let f2 = fence_of(&faulty.claim(req("k", me, lease)).await.unwrap());
    assert!(f2 > f);
    faulty.lose_next_replies(1);
    assert!(
        faulty
            .complete("k", me, b"I1done!", Duration::from_secs(60))
            .await
            .is_err()
    );
    assert_eq!(
        faulty
            .complete("k", me, b"I1done!", Duration::from_secs(60))
            .await
            .unwrap(),
        Owned::Applied
    );
    assert_eq!(faulty.counts().lost_replies, 3);
    // And through the guard: a lost complete reply still returns the body's value once.
    let idem = handle(Arc::new(FaultyStore::new(fx.store.clone())));
    let runs = std::sync::atomic::AtomicUsize::new(0);
    for _ in 0..3 {
        let out = idem
            .guard("lost", &[&1u8])
            .run(|_| {
                runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async { Res::Ok(9) }
            })
            .await
            .unwrap();
        assert_eq!(out.into_inner(), 9);
    }
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
}

async fn cancelled_waiter_leaves_nothing(d: Dialect) {
    let fx = Fixture::new(d).await;
    let idem = handle(fx.dyn_store());
    let key = idem.key("c", &[&1u8]);
    // Someone else holds the key; our call waits, and is dropped before its body starts.
    let holder = Owner::random();
    fence_of(
        &fx.store
            .claim(req(key.as_str(), holder, Duration::from_secs(5)))
            .await
            .unwrap(),
    );
    let started = std::sync::atomic::AtomicBool::new(false);
    let r = tokio::time::timeout(
        Duration::from_millis(300),
        idem.guard_key(key.clone()).run(|_| {
            started.store(true, std::sync::atomic::Ordering::SeqCst);
            async { Res::Ok(1) }
        }),
    )
    .await;
    assert!(r.is_err(), "the call was still waiting");
    assert!(!started.load(std::sync::atomic::Ordering::SeqCst));
    tokio::time::sleep(Duration::from_millis(100)).await;
    match idem.inspect(&key).await.unwrap() {
        Some(RecordState::InProgress { owner, .. }) => {
            assert_eq!(owner, holder, "the holder's claim is untouched")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        fx.store.release(key.as_str(), holder).await.unwrap(),
        Owned::Applied
    );
    let out = idem
        .guard_key(key.clone())
        .run(|_| async { Res::Ok(2) })
        .await
        .unwrap();
    assert_eq!((out.how(), out.into_inner()), (How::Executed, 2));
}

async fn cancelled_after_start_keeps_claim(d: Dialect) {
    let fx = Fixture::new(d).await;
    let idem = handle(fx.dyn_store());
    let (tx, rx) = tokio::sync::oneshot::channel();
    let task = {
        let idem = idem.clone();
        tokio::spawn(async move {
            let g = idem.guard("ship", &[&5u8]).lease(Duration::from_secs(1));
            g.run(|_| async move {
                let _ = tx.send(());
                tokio::time::sleep(Duration::from_secs(60)).await;
                Res::Ok(1)
            })
            .await
        })
    };
    rx.await.unwrap();
    task.abort();
    let _ = task.await;
    // The body may have committed effects: the claim stays until the lease lapses.
    let r = idem
        .guard("ship", &[&5u8])
        .concurrent(Concurrency::Reject)
        .run(|_| async { Res::Ok(2) })
        .await;
    assert!(
        matches!(r, Err(AppErr::Idem(Error::InProgress { .. }))),
        "{r:?}"
    );
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let out = idem
        .guard("ship", &[&5u8])
        .run(|_| async { Res::Ok(3) })
        .await
        .unwrap();
    assert_eq!((out.how(), out.into_inner()), (How::Executed, 3));
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
    let o = Owner::random();
    next(
        fence_of(&s.claim(req("f", o, short)).await.unwrap()),
        "first",
    );
    assert!(s.forget("f").await.unwrap());
    assert!(!s.forget("f").await.unwrap());
    let o = Owner::random();
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
        fence_of(&s.claim(req("f", Owner::random(), short)).await.unwrap()),
        "after purge",
    );
    tokio::time::sleep(Duration::from_millis(1300)).await;
    next(
        fence_of(&s.claim(req("f", Owner::random(), short)).await.unwrap()),
        "after expiry",
    );
    for i in 0..20 {
        assert!(s.forget("f").await.unwrap());
        next(
            fence_of(&s.claim(req("f", Owner::random(), short)).await.unwrap()),
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
        .run(|_| {
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
        .claim(req("k", Owner::random(), Duration::from_secs(1)))
        .await
        .unwrap_err();
    assert!(
        matches!(e, idem::store::StoreError::Unavailable(_)),
        "{e:?}"
    );
}

async fn degraded_backstop_one_row(d: Dialect) {
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
                |_| async move { Res::Ok(biz.insert("no-1").await?) },
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

async fn terminal_error_replayed(d: Dialect) {
    let fx = Fixture::new(d).await;
    let idem = handle(fx.dyn_store());
    let runs = std::sync::atomic::AtomicUsize::new(0);
    for _ in 0..3 {
        let r = idem
            .guard("kyc", &[&9u8])
            .run_with(
                Hooks::new().terminal(Terminal::new(|e: &AppErr| matches!(e, AppErr::Refused(_)))),
                |_| {
                    runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    async { Res::<u8>::Err(AppErr::Refused("blocked".into())) }
                },
            )
            .await;
        assert!(
            matches!(&r, Err(AppErr::Refused(s)) if s == "blocked"),
            "{r:?}"
        );
    }
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
}

async fn version_mismatch_is_codec(d: Dialect) {
    let fx = Fixture::new(d).await;
    let idem = handle(fx.dyn_store());
    idem.guard("v", &[&1u8])
        .version(1)
        .run(|_| async { Res::Ok(1) })
        .await
        .unwrap();
    let r = idem
        .guard("v", &[&1u8])
        .version(2)
        .run(|_| async { Res::Ok(2) })
        .await;
    assert!(matches!(r, Err(AppErr::Idem(Error::Codec { .. }))), "{r:?}");
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
        .claim(req(k, Owner::random(), Duration::from_secs(1)))
        .await
        .unwrap_err();
    assert!(matches!(e, idem::store::StoreError::Codec(_)), "{e:?}");
    let r = idem
        .guard_key(key.clone())
        .run(|_| async { Res::Ok(1) })
        .await;
    assert!(matches!(r, Err(AppErr::Idem(Error::Codec { .. }))), "{r:?}");
}

async fn purge_removes_only_expired(d: Dialect) {
    let fx = Fixture::new(d).await;
    let s = &fx.store;
    for i in 0..5 {
        let k = format!("p{i}");
        let o = Owner::random();
        fence_of(&s.claim(req(&k, o, Duration::from_secs(10))).await.unwrap());
        let ttl = if i < 3 {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(3600)
        };
        assert_eq!(
            s.complete(&k, o, b"I1.....", ttl).await.unwrap(),
            Owned::Applied
        );
    }
    // An in-progress claim with a long lease is not expired either.
    fence_of(
        &s.claim(req("p-live", Owner::random(), Duration::from_secs(60)))
            .await
            .unwrap(),
    );
    assert_eq!(s.purge_expired().await.unwrap(), 0);
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(s.purge_expired().await.unwrap(), 3);
    assert_eq!(s.purge_expired().await.unwrap(), 0);
    for k in ["p3", "p4"] {
        assert!(matches!(
            s.inspect(k).await.unwrap(),
            Some(RecordState::Done { .. })
        ));
    }
    assert!(matches!(
        s.inspect("p-live").await.unwrap(),
        Some(RecordState::InProgress { .. })
    ));
}

async fn verify_names_missing_table(d: Dialect) {
    let fx = Fixture::new(d).await;
    assert_eq!(fx.store.verify().await.unwrap(), vec![]);
    let names = match d {
        Dialect::Postgres => TableNames::new("never_made")
            .unwrap()
            .schema(fx.names.schema_name().unwrap())
            .unwrap(),
        _ => TableNames::new(&format!("never_made_{}", crate::sql_support::suffix())).unwrap(),
    };
    let bare = (*fx.store).clone().with_tables(names.clone());
    let e = bare.verify().await.unwrap_err();
    assert!(
        matches!(&e, idem::store::StoreError::Config(m) if m.contains(names.records_name())),
        "{e:?}"
    );
    // Through the handle, the error names the table as well.
    let idem = handle(Arc::new(bare.clone()));
    let e = idem.verify(&[]).await.unwrap_err();
    assert!(e.to_string().contains(names.records_name()), "{e}");
    // Using the missing table is a configuration error, not garbage.
    let e = bare
        .claim(req("k", Owner::random(), Duration::from_secs(1)))
        .await
        .unwrap_err();
    assert!(matches!(e, idem::store::StoreError::Config(_)), "{e:?}");
    // migrate() is explicit and idempotent.
    bare.migrate().await.unwrap();
    bare.migrate().await.unwrap();
    assert_eq!(bare.verify().await.unwrap(), vec![]);
    if d == Dialect::MySql {
        fx.exec(&format!(
            "DROP TABLE {}, {}",
            names.records_name(),
            names.fences_name()
        ))
        .await;
    }
}

async fn ddl_applies_cleanly(d: Dialect) {
    let fx = Fixture::new(d).await;
    let names = match d {
        Dialect::Postgres => TableNames::new("from_ddl")
            .unwrap()
            .schema(fx.names.schema_name().unwrap())
            .unwrap(),
        _ => TableNames::new(&format!("from_ddl_{}", crate::sql_support::suffix())).unwrap(),
    };
    let text = ddl(d, &names);
    // Applied twice, as a migration tool rerunning it would.
    fx.exec(&text).await;
    fx.exec(&text).await;
    let store = (*fx.store).clone().with_tables(names.clone());
    assert_eq!(store.verify().await.unwrap(), vec![]);
    let idem = handle(Arc::new(store));
    let out = idem
        .guard("ddl", &[&1u8])
        .run(|f| async move { Res::Ok(f.get()) })
        .await
        .unwrap();
    assert!(out.into_inner() > 0);
    if d == Dialect::MySql {
        fx.exec(&format!(
            "DROP TABLE {}, {}",
            names.records_name(),
            names.fences_name()
        ))
        .await;
    }
}
