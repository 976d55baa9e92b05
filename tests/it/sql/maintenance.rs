//! The SQL stores' upkeep: purge, verify, DDL, byte-exact keys, store instances
//! sharing one set of tables, SQLite without WAL.

use std::sync::Arc;
use std::time::Duration;

use idem::Store;
use idem::db::Dialect;
use idem::store::sql::{SqlStore, TableNames, ddl};
use idem::store::{Claim, Owned, Owner, RecordState};

use crate::sql::store::{Res, fence_of, handle, req};
use crate::support::sql::Fixture;

crate::support::sql::per_database!(
    purge_removes_only_expired,
    verify_names_missing_table,
    ddl_applies_cleanly,
    keys_are_byte_exact,
    instances_share_the_tables,
);
/// The records that expire in `purge_removes_only_expired`: long enough that
/// none has lapsed at its first purge on a busy machine.
const SHORT_TTL: Duration = Duration::from_secs(3);

async fn purge_removes_only_expired(d: Dialect) {
    let fx = Fixture::new(d).await;
    let s = &fx.store;
    for i in 0..5 {
        let k = format!("p{i}");
        let o = Owner::fresh();
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
        &s.claim(req("p-live", Owner::fresh(), Duration::from_secs(60)))
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
        // In the fixture's own database, dropped with it.
        _ => TableNames::new("never_made").unwrap(),
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
        .claim(req("k", Owner::fresh(), Duration::from_secs(1)))
        .await
        .unwrap_err();
    assert!(matches!(e, idem::store::StoreError::Config(_)), "{e:?}");
    // migrate() is explicit and idempotent.
    bare.migrate().await.unwrap();
    bare.migrate().await.unwrap();
    assert_eq!(bare.verify().await.unwrap(), vec![]);
}

async fn ddl_applies_cleanly(d: Dialect) {
    let fx = Fixture::new(d).await;
    let names = match d {
        Dialect::Postgres => TableNames::new("from_ddl")
            .unwrap()
            .schema(fx.names.schema_name().unwrap())
            .unwrap(),
        // In the fixture's own database, dropped with it.
        _ => TableNames::new("from_ddl").unwrap(),
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
        .run_fenced(|f| async move { Res::Ok(f.get()) })
        .await
        .unwrap();
    assert!(out.into_inner() > 0);
}

/// Keys differing only in case or trailing spaces are different keys (MySQL's
/// default collations would merge them: hence `VARBINARY`).
async fn keys_are_byte_exact(d: Dialect) {
    let fx = Fixture::new(d).await;
    let mut fences = Vec::new();
    for k in ["Order:1", "order:1", "order:1 ", "ordér:1"] {
        let c = fx
            .store
            .claim(req(k, Owner::fresh(), Duration::from_secs(30)))
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
        .claim(req(&long, Owner::fresh(), Duration::from_secs(30)))
        .await
        .unwrap_err();
    assert!(matches!(e, idem::store::StoreError::Input(_)), "{e:?}");
    let at_limit = "k".repeat(idem::store::sql::MAX_KEY_BYTES);
    fence_of(
        &fx.store
            .claim(req(&at_limit, Owner::fresh(), Duration::from_secs(30)))
            .await
            .unwrap(),
    );
}

/// Two store instances (two pools, as two processes would have) on one set of
/// tables see each other's claims, results and forgets.
async fn instances_share_the_tables(d: Dialect) {
    let fx = Fixture::new(d).await;
    let other = fx.another_instance().await;
    let (a, b) = (Owner::fresh(), Owner::fresh());
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
