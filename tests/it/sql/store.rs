//! What the shared conformance suite (run on these stores by `sql_conformance`)
//! does not cover: the CI-size concurrency burst, purge, verify, DDL, garbage
//! rows, a real outage, the backstop on the same database, byte-exact keys and
//! several store instances on one set of tables. Each case is written once and
//! instantiated per database by `per_database!`.

use std::sync::Arc;
use std::time::Duration;

use idem::fingerprint::Fingerprint;
use idem::store::sql::{Dialect, SqlStore, TableNames, ddl};
use idem::store::{Claim, ClaimRequest, Owned, Owner, RecordState};
use idem::{Error, FaultyStore, Hooks, How, Idem, Store};
use tokio::sync::Barrier;

use crate::support::sql::{Biz, Fixture};

#[derive(Debug, thiserror::Error)]
enum AppErr {
    #[error("idem: {0}")]
    Idem(#[from] Error),
    #[error("db: {0}")]
    Db(#[from] sqlx::Error),
}

type Res<T> = Result<T, AppErr>;

pub(crate) fn handle(store: Arc<dyn Store>) -> Idem {
    Idem::builder()
        .shared_store(store)
        .namespace(format!("t-{}", crate::support::sql::suffix()))
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

crate::support::sql::per_database!(
    concurrent_callers_many_keys,
    fences_increase_across_expiry_forget_purge,
    unavailable_fails_closed,
    degraded_backstop_same_database,
    garbage_row_is_codec,
    purge_removes_only_expired,
    verify_names_missing_table,
    ddl_applies_cleanly,
    keys_are_byte_exact,
    instances_share_the_tables,
    cancelled_claims_leave_no_open_transaction,
    unstorable_keys_are_invalid_input,
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
                        .run(|fence| async move {
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
    // The sqlx error is the source, on the store's error and through the guard.
    let source = std::error::Error::source(&e).expect("the driver error as source");
    assert!(source.downcast_ref::<sqlx::Error>().is_some(), "{source:?}");
    let r = handle(Arc::new(dead))
        .guard("pay", &[&2u8])
        .run(|_| async { Res::Ok(2) })
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

/// The records that expire in `purge_removes_only_expired`: long enough that
/// none has lapsed at its first purge on a busy machine.
const SHORT_TTL: Duration = Duration::from_secs(3);

async fn purge_removes_only_expired(d: Dialect) {
    let fx = Fixture::new(d).await;
    let s = &fx.store;
    for i in 0..5 {
        let k = format!("p{i}");
        let o = Owner::random();
        fence_of(&s.claim(req(&k, o, Duration::from_secs(10))).await.unwrap());
        let ttl = if i < 3 {
            SHORT_TTL
        } else {
            Duration::from_secs(3600)
        };
        assert_eq!(
            s.complete(&k, o, b"I1.....", ttl).await.unwrap(),
            Owned::Applied
        );
    }
    // The short records lapse by then, however slow the loop above was.
    let lapsed = tokio::time::Instant::now() + SHORT_TTL + Duration::from_millis(300);
    // An in-progress claim with a long lease is not expired either.
    fence_of(
        &s.claim(req("p-live", Owner::random(), Duration::from_secs(60)))
            .await
            .unwrap(),
    );
    assert_eq!(s.purge_expired().await.unwrap(), 0);
    // 2,500 long-expired rows more: purged in batches of 1,000 by one call.
    let t = fx.records();
    let bulk = match d {
        Dialect::Postgres => format!(
            "INSERT INTO {t} SELECT 'bulk' || g, 1, '\\x00000000000000000000000000000001'::bytea, g, \
             '\\x00000000000000000000000000000000'::bytea, 'x'::bytea, now() - interval '1 hour' \
             FROM generate_series(1, 2500) g"
        ),
        Dialect::MySql => format!(
            "SET SESSION max_recursive_iterations = 10000; \
             INSERT INTO {t} WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 2500) \
             SELECT CONCAT('bulk', n), 1, UNHEX(REPEAT('01', 16)), n, UNHEX(REPEAT('00', 16)), 'x', \
             UTC_TIMESTAMP(6) - INTERVAL 1 HOUR FROM g"
        ),
        _ => format!(
            "INSERT INTO {t} WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 2500) \
             SELECT 'bulk' || n, 1, zeroblob(16), n, zeroblob(16), x'78', (unixepoch() - 3600) * 1000000 FROM g"
        ),
    };
    fx.exec(&bulk).await;
    tokio::time::sleep_until(lapsed).await;
    assert_eq!(s.purge_expired().await.unwrap(), 2_503);
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
        _ => TableNames::new(&format!("never_made_{}", crate::support::sql::suffix())).unwrap(),
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
            "DROP TABLE {}, {}, {}",
            names.records_name(),
            names.fences_name(),
            names.tokens_name()
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
        _ => TableNames::new(&format!("from_ddl_{}", crate::support::sql::suffix())).unwrap(),
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
            "DROP TABLE {}, {}, {}",
            names.records_name(),
            names.fences_name(),
            names.tokens_name()
        ))
        .await;
    }
}

/// Keys differing only in case or trailing spaces are different keys (MySQL's
/// default collations would merge them: hence `VARBINARY`).
async fn keys_are_byte_exact(d: Dialect) {
    let fx = Fixture::new(d).await;
    let mut fences = Vec::new();
    for k in ["Order:1", "order:1", "order:1 ", "ordér:1"] {
        let c = fx
            .store
            .claim(req(k, Owner::random(), Duration::from_secs(30)))
            .await
            .unwrap();
        fences.push(fence_of(&c));
    }
    fences.dedup();
    assert_eq!(fences.len(), 4, "four distinct keys, four claims");
    // Longer than a record row holds: refused, never truncated into another key.
    let long = "k".repeat(idem::store::sql::MAX_KEY_BYTES + 1);
    let e = fx
        .store
        .claim(req(&long, Owner::random(), Duration::from_secs(30)))
        .await
        .unwrap_err();
    assert!(matches!(e, idem::store::StoreError::Input(_)), "{e:?}");
    let at_limit = "k".repeat(idem::store::sql::MAX_KEY_BYTES);
    fence_of(
        &fx.store
            .claim(req(&at_limit, Owner::random(), Duration::from_secs(30)))
            .await
            .unwrap(),
    );
}

/// Two store instances (two pools, as two processes would have) on one set of
/// tables see each other's claims, results and forgets.
async fn instances_share_the_tables(d: Dialect) {
    let fx = Fixture::new(d).await;
    let other = fx.another_instance().await;
    let (a, b) = (Owner::random(), Owner::random());
    let fa = fence_of(
        &fx.store
            .claim(req("k", a, Duration::from_secs(30)))
            .await
            .unwrap(),
    );
    assert!(matches!(
        other
            .claim(req("k", b, Duration::from_secs(30)))
            .await
            .unwrap(),
        Claim::Busy { .. }
    ));
    assert_eq!(
        fx.store
            .complete("k", a, b"I1.....", Duration::from_secs(60))
            .await
            .unwrap(),
        Owned::Applied
    );
    match other
        .claim(req("k", b, Duration::from_secs(30)))
        .await
        .unwrap()
    {
        Claim::Done(rec) => assert_eq!((rec.owner, rec.fence.get()), (a, fa)),
        c => panic!("{c:?}"),
    }
    // A forget through the other instance is seen at once: nothing is cached
    // about finished records.
    assert!(other.forget("k").await.unwrap());
    let fb = fence_of(
        &fx.store
            .claim(req("k", b, Duration::from_secs(30)))
            .await
            .unwrap(),
    );
    assert!(fb > fa);
}

/// `verify()` warns about a SQLite database outside WAL mode.
#[tokio::test]
async fn sqlite_without_wal_is_a_warning() {
    let dir = crate::support::sql::TempDir::new();
    let opts = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.path().join("rollback.db"))
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Delete);
    let store = SqlStore::sqlite(sqlx::SqlitePool::connect_with(opts).await.unwrap());
    store.migrate().await.unwrap();
    let warnings = store.verify().await.unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].0.contains("journal_mode"), "{warnings:?}");
    let wal = SqlStore::open(dir.path().join("wal.db")).await.unwrap();
    wal.migrate().await.unwrap();
    assert_eq!(wal.verify().await.unwrap(), vec![]);
}

/// Callers that give up mid-claim (timeouts at every point of the claim's
/// statements) must not leave a pooled connection inside a transaction: sqlx's
/// `begin()` cut after `BEGIN` was sent returns the connection with the server
/// still in a transaction, and every later autocommit statement on it would
/// stay uncommitted. So: a storm of cut claims on one connection, then deletes
/// on that same connection, which another connection must see at once.
async fn cancelled_claims_leave_no_open_transaction(d: Dialect) {
    let fx = Fixture::new(d).await;
    let store = fx.another_instance().await; // 1 connection (servers) / 4 (SQLite)
    // The cuts must land before, inside and after a claim's statements, so they
    // spread over twice the slowest of a few whole claims timed here, on this
    // connection and at this moment's load (fixed cuts of up to 10 ms all fell
    // before the first statement on a loaded machine: nothing ever applied).
    let mut whole = Duration::ZERO;
    for j in 0..5 {
        let t0 = std::time::Instant::now();
        fence_of(
            &store
                .claim(req(
                    &format!("w{j}"),
                    Owner::random(),
                    Duration::from_secs(30),
                ))
                .await
                .unwrap(),
        );
        whole = whole.max(t0.elapsed());
    }
    let n = 300u64;
    for i in 0..n {
        let k = format!("c{i}");
        let cut = (whole * 2).mul_f64((i % 100) as f64 / 100.0);
        let _ = tokio::time::timeout(
            cut,
            store.claim(req(&k, Owner::random(), Duration::from_secs(30))),
        )
        .await;
    }
    // Let detached work finish.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut live = 0;
    for i in 0..n {
        let k = format!("c{i}");
        if store.forget(&k).await.unwrap() {
            live += 1;
            assert_eq!(
                fx.store.inspect(&k).await.unwrap(),
                None,
                "{k}: a delete on the reused connection is not visible elsewhere (left in a transaction)"
            );
        }
    }
    assert!(live > 0, "some claims applied before their callers gave up");
}

/// A key the records table cannot hold (longer than [`MAX_KEY_BYTES`], or with a
/// NUL byte on PostgreSQL, whose `TEXT` cannot hold one) is the caller's input
/// error: a typed `InvalidKey`, the body never runs, and it never counts as a
/// store failure: ten of them in a row leave the circuit breaker closed, so the
/// healthy call after them runs.
///
/// [`MAX_KEY_BYTES`]: idem::store::sql::MAX_KEY_BYTES
async fn unstorable_keys_are_invalid_input(d: Dialect) {
    let fx = Fixture::new(d).await;
    let idem = Idem::builder()
        .shared_store(fx.dyn_store())
        .namespace(format!("t-{}", crate::support::sql::suffix()))
        .op_timeout(Duration::from_secs(5))
        // A cooldown no test outlives: an open breaker fails the healthy call below
        // however slowly the bad calls ran.
        .circuit_breaker(5, Duration::from_secs(3600))
        .build()
        .unwrap();
    // (A NUL in a scene no longer reaches the store through the guard: scenes are
    // escaped like key parts since issue 10 §A4; see the end of this test.)
    let scenes = vec![("s".repeat(idem::store::sql::MAX_KEY_BYTES + 1), "longer")];
    let runs = std::sync::atomic::AtomicUsize::new(0);
    let mut errors = Vec::new();
    for (scene, why) in &scenes {
        let key = idem.key(scene, &[&1u8]);
        assert!(
            key.as_str().len() > idem::store::sql::MAX_KEY_BYTES || key.as_str().contains('\0'),
            "precondition: the rendered key `{key:?}` must be unstorable as is"
        );
        for _ in 0..10 {
            let r = idem
                .guard(scene, &[&1u8])
                .run(|_| {
                    runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    async { Res::Ok(1) }
                })
                .await;
            errors.push((key.as_str().to_owned(), *why, r));
        }
    }
    // The breaker is untouched: a healthy call right after runs its body.
    let out = idem
        .guard("healthy", &[&1u8])
        .run(|_| async { Res::Ok(7) })
        .await
        .expect("a healthy call after ten unstorable keys");
    assert_eq!((out.how(), out.into_inner()), (How::Executed, 7));
    assert_eq!(
        runs.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "no body runs for an unstorable key"
    );
    for (key, why, r) in errors {
        match r {
            Err(AppErr::Idem(Error::InvalidKey { key: k, reason })) => {
                assert_eq!(k, key);
                assert!(reason.contains(why), "{reason}");
            }
            other => panic!(
                "expected InvalidKey for a {}-byte key ({why}), got {other:?}",
                key.len()
            ),
        }
    }
    assert_eq!(
        idem.stats().count("executed"),
        1,
        "only the healthy call ran"
    );
    // A NUL in a scene is escaped by the key builder, so PostgreSQL's `TEXT` can
    // hold the key and the call runs like any other.
    let nul = idem.key("nul\0scene", &[&1u8]);
    assert!(!nul.as_str().contains('\0'), "{nul:?}");
    let out = idem
        .guard("nul\0scene", &[&1u8])
        .run(|_| async { Res::Ok(8) })
        .await
        .expect("a NUL scene is an ordinary, escaped key");
    assert_eq!((out.how(), out.into_inner()), (How::Executed, 8));
    // The store itself refuses them on every operation that takes a key.
    let s = &fx.store;
    let mut keys = vec!["k".repeat(idem::store::sql::MAX_KEY_BYTES + 1)];
    if d == Dialect::Postgres {
        keys.push("a\0b".to_owned());
    }
    let o = Owner::random();
    let lease = Duration::from_secs(30);
    for k in &keys {
        let input = |r: Result<(), idem::store::StoreError>| {
            assert!(matches!(r, Err(idem::store::StoreError::Input(_))), "{r:?}")
        };
        input(s.claim(req(k, o, lease)).await.map(drop));
        input(s.complete(k, o, b"I1.....", lease).await.map(drop));
        input(s.release(k, o).await.map(drop));
        input(s.renew(k, o, lease).await.map(drop));
        input(s.inspect(k).await.map(drop));
        input(s.forget(k).await.map(drop));
    }
}

/// A fence sequence with `CACHE > 1` hands each connection a block of values,
/// so fences of concurrent connections interleave and go backwards for a key:
/// `verify()` refuses it, naming the sequence and the fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_fence_sequence_with_cache_fails_verify() {
    let fx = Fixture::new(Dialect::Postgres).await;
    assert_eq!(fx.store.verify().await.unwrap(), vec![]);
    let seq = format!(
        "{}.{}",
        fx.names.schema_name().unwrap(),
        fx.names.fences_name()
    );
    fx.exec(&format!("ALTER SEQUENCE {seq} CACHE 20")).await;
    let e = fx
        .store
        .verify()
        .await
        .expect_err("a cached fence sequence must fail verify()");
    let msg = e.to_string();
    assert!(matches!(e, idem::store::StoreError::Config(_)), "{e:?}");
    assert!(msg.contains(&seq), "names the sequence: {msg}");
    assert!(msg.contains("CACHE 20"), "says what is wrong: {msg}");
    assert!(
        msg.contains(&format!("ALTER SEQUENCE {seq} CACHE 1")),
        "says the fix: {msg}"
    );
    // Through the handle: a verification error with the same text.
    let e = handle(fx.dyn_store()).verify(&[]).await.unwrap_err();
    assert!(
        matches!(e, Error::Verify(ref m) if m.contains("CACHE 1")),
        "{e}"
    );
    // Fixed as told, it passes again.
    fx.exec(&format!("ALTER SEQUENCE {seq} CACHE 1")).await;
    assert_eq!(fx.store.verify().await.unwrap(), vec![]);
}

/// The SQL kernel reads real server errors as the store (and the techniques)
/// need them: a NUL in PostgreSQL text and an over-long MariaDB key are the
/// caller's input, a missing table is a missing object, not an outage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernel_classifies_real_server_errors() {
    use idem_runtime::db::{Failure, classify};
    let pg = sqlx::PgPool::connect(&crate::support::sql::pg_url())
        .await
        .expect("PostgreSQL is required for this test");
    let e = sqlx::query("SELECT $1::text")
        .bind("a\0b")
        .fetch_one(&pg)
        .await
        .unwrap_err();
    assert_eq!(classify(&e), Failure::Input, "{e:?}");
    let e = sqlx::query("SELECT * FROM idem_never_made_table")
        .fetch_all(&pg)
        .await
        .unwrap_err();
    assert_eq!(classify(&e), Failure::MissingObject, "{e:?}");
    let my = sqlx::MySqlPool::connect(&crate::support::sql::mysql_url())
        .await
        .expect("MariaDB is required for this test");
    let t = format!("idem_classify_{}", crate::support::sql::suffix());
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "CREATE TABLE {t} (k VARBINARY(8) PRIMARY KEY)"
    )))
    .execute(&my)
    .await
    .unwrap();
    let e = sqlx::query(sqlx::AssertSqlSafe(format!("INSERT INTO {t} VALUES (?)")))
        .bind("123456789")
        .execute(&my)
        .await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP TABLE {t}")))
        .execute(&my)
        .await
        .unwrap();
    let e = e.unwrap_err();
    assert_eq!(classify(&e), Failure::Input, "{e:?}");
}
