//! The SQL stores' one-time token table at the store level (the behaviour
//! through `idem.tokens()` runs in `token.rs`): the state cycle against the
//! memory store's reference answers, a retried `take` by the same owner after
//! a lost reply, purge, verify, the DDL and unstorable keys. Each case runs
//! per database on fresh tables; the cycle runs on memory too, so the expected
//! answers are the reference semantics, not the SQL code's.

use std::sync::Arc;
use std::time::Duration;

use idem::db::Dialect;

use idem::store::sql::{TableNames, ddl};
use idem::store::token::{TokenStore, TokenTake};
use idem::store::{Owned, Owner, StoreError};
use idem::{Error, Store};

use crate::support::sql::Fixture;

crate::support::sql::per_database!(
    cycle_matches_memory,
    concurrent_takes_one_winner,
    two_instances_one_execution,
    purge_removes_expired_tokens,
    verify_names_missing_token_table,
    ddl_contains_the_token_table,
    unstorable_token_keys_are_invalid_input,
);

fn fence(t: TokenTake) -> u64 {
    match t {
        TokenTake::Taken { fence } => fence.get(),
        other => panic!("expected Taken, got {other:?}"),
    }
}

/// `Busy`, with time left on a lease of `lease`, plus the project's 1 s of
/// slack: a database reads its clock when the statement starts, which can be
/// before the row is read (MariaDB's `UTC_TIMESTAMP(6)` under load: 335 ms
/// seen), so the time left is an estimate, used only to cap a waiter's sleep.
fn busy(t: TokenTake, lease: Duration) {
    match t {
        TokenTake::Busy { remaining } => {
            assert!(
                !remaining.is_zero() && remaining <= lease + Duration::from_secs(1),
                "{remaining:?}"
            )
        }
        other => panic!("expected Busy, got {other:?}"),
    }
}

/// The whole cycle, `a` and `b` on two store instances over the same tokens
/// (two processes for SQL; the same store for memory).
async fn cycle(a: &dyn TokenStore, b: &dyn TokenStore) {
    let (oa, ob) = (Owner::random(), Owner::random());
    let lease = Duration::from_secs(30);
    let k = "shop:token:form:0123456789abcdef";
    assert_eq!(a.take(k, oa, lease).await.unwrap(), TokenTake::Invalid);
    a.issue(k, Duration::from_secs(60)).await.unwrap();
    // A retried take by the same owner (its first reply lost) holds it still,
    // with the same fence, whichever instance it reaches.
    let f1 = fence(a.take(k, oa, lease).await.unwrap());
    assert_eq!(fence(a.take(k, oa, lease).await.unwrap()), f1);
    assert_eq!(fence(b.take(k, oa, lease).await.unwrap()), f1);
    busy(b.take(k, ob, lease).await.unwrap(), lease);
    // Issuing an existing token changes nothing: still a's.
    b.issue(k, Duration::from_secs(60)).await.unwrap();
    busy(b.take(k, ob, lease).await.unwrap(), lease);
    // Only the owner renews or gives back.
    assert_eq!(b.renew(k, ob, lease).await.unwrap(), Owned::NotOwner);
    assert_eq!(b.give_back(k, ob).await.unwrap(), Owned::NotOwner);
    assert_eq!(a.renew(k, oa, lease).await.unwrap(), Owned::Applied);
    assert_eq!(a.give_back(k, oa).await.unwrap(), Owned::Applied);
    // Given back: issued, nobody's; a's repeated give-back is not its own any more.
    assert_eq!(a.give_back(k, oa).await.unwrap(), Owned::NotOwner);
    assert_eq!(a.renew(k, oa, lease).await.unwrap(), Owned::NotOwner);
    let f2 = fence(b.take(k, ob, lease).await.unwrap());
    assert!(f2 > f1, "{f2} > {f1}");
    assert_eq!(a.give_back(k, oa).await.unwrap(), Owned::NotOwner);
    // b's body succeeded: the token goes. A retried revoke (lost reply) is
    // applied; every take is invalid.
    assert_eq!(b.revoke(k).await.unwrap(), Owned::Applied);
    assert_eq!(b.revoke(k).await.unwrap(), Owned::Applied);
    assert_eq!(b.give_back(k, ob).await.unwrap(), Owned::Applied);
    assert_eq!(b.renew(k, ob, lease).await.unwrap(), Owned::NotOwner);
    assert_eq!(a.take(k, oa, lease).await.unwrap(), TokenTake::Invalid);
    assert_eq!(b.take(k, ob, lease).await.unwrap(), TokenTake::Invalid);

    // A crashed holder: its 1 s lease lapses, another owner takes over with a
    // larger fence; the old holder then owns nothing.
    let k2 = "shop:token:form:fedcba9876543210";
    let short = Duration::from_secs(1);
    a.issue(k2, Duration::from_secs(60)).await.unwrap();
    let g1 = fence(a.take(k2, oa, short).await.unwrap());
    busy(b.take(k2, ob, lease).await.unwrap(), short);
    tokio::time::sleep(short + Duration::from_millis(300)).await;
    let g2 = fence(b.take(k2, ob, lease).await.unwrap());
    assert!(g2 > g1, "{g2} > {g1}");
    busy(a.take(k2, oa, short).await.unwrap(), lease);
    assert_eq!(a.renew(k2, oa, lease).await.unwrap(), Owned::NotOwner);
    assert_eq!(a.give_back(k2, oa).await.unwrap(), Owned::NotOwner);
    // A body that succeeded after its lease lapsed spends the token whoever
    // holds it now: a's revoke ends b's hold, and nothing takes it again.
    assert_eq!(a.revoke(k2).await.unwrap(), Owned::Applied);
    assert_eq!(b.take(k2, ob, lease).await.unwrap(), TokenTake::Invalid);
    assert_eq!(b.give_back(k2, ob).await.unwrap(), Owned::Applied);

    // An expired token is invalid, even for the owner it was taken by.
    let k3 = "shop:token:form:00000000ffffffff";
    a.issue(k3, Duration::from_secs(1)).await.unwrap();
    fence(a.take(k3, oa, lease).await.unwrap());
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(a.take(k3, oa, lease).await.unwrap(), TokenTake::Invalid);
    assert_eq!(a.renew(k3, oa, lease).await.unwrap(), Owned::NotOwner);
    assert_eq!(a.revoke(k3).await.unwrap(), Owned::Applied);
    // An expired key is issued anew.
    a.issue(k3, Duration::from_secs(60)).await.unwrap();
    fence(b.take(k3, ob, lease).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cycle_on_memory() {
    let m = idem::MemoryStore::new();
    let t = m.tokens().expect("memory keeps tokens");
    cycle(t, t).await;
}

async fn cycle_matches_memory(d: Dialect) {
    let fx = Fixture::new(d).await;
    let other = fx.another_instance().await;
    let a = fx.store.tokens().expect("SQL keeps tokens");
    let b = other.tokens().expect("SQL keeps tokens");
    cycle(a, b).await;
}

/// 40 takes of one token with distinct owners, half through another store
/// instance (another process's pool), behind a barrier: exactly one is
/// `Taken`, all others `Busy`; five tokens in a row.
async fn concurrent_takes_one_winner(d: Dialect) {
    let fx = Fixture::new(d).await;
    let other = Arc::new(fx.another_instance().await);
    let lease = Duration::from_secs(30);
    for round in 0..5 {
        let k = format!("shop:token:race:{round}");
        fx.store.issue(&k, Duration::from_secs(60)).await.unwrap();
        let barrier = Arc::new(tokio::sync::Barrier::new(40));
        let mut tasks = Vec::new();
        for i in 0..40 {
            let store: Arc<dyn Store> = if i % 2 == 0 {
                fx.store.clone()
            } else {
                other.clone()
            };
            let (k, barrier) = (k.clone(), barrier.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                let t = store.tokens().unwrap();
                t.take(&k, Owner::random(), lease).await.unwrap()
            }));
        }
        let (mut taken, mut busy_n) = (0, 0);
        for t in tasks {
            match t.await.unwrap() {
                TokenTake::Taken { .. } => taken += 1,
                b @ TokenTake::Busy { .. } => {
                    busy(b, lease);
                    busy_n += 1;
                }
                TokenTake::Invalid => panic!("a live token was reported invalid"),
            }
        }
        assert_eq!((taken, busy_n), (1, 39), "round {round}");
    }
}

/// 50 submissions of one token through two handles on two store instances (no
/// shared local wake-up: the other instance's waiters poll the table): the
/// body runs once, every other submission finds the token consumed. Each
/// instance has a pool of 4 (25 pollers queueing on one connection of a loaded
/// 2-core machine passed the 666 ms op budget of a 2 s lease in CI: the lease
/// is 15 s, so each take has 5 s, and the wait 30 s; nothing here is timed).
async fn two_instances_one_execution(d: Dialect) {
    let fx = Fixture::new(d).await;
    let other: Arc<dyn Store> = Arc::new(fx.another_instance_with(4).await);
    let (h1, h2) = (
        Arc::new(crate::sql::store::handle(fx.dyn_store())),
        Arc::new(crate::sql::store::handle(other)),
    );
    let token = h1
        .tokens()
        .issue("token:two", Duration::from_secs(60))
        .await
        .unwrap()
        .into_string();
    let runs = crate::support::Counter::default();
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = Vec::new();
    for i in 0..50 {
        let idem = if i % 2 == 0 { h1.clone() } else { h2.clone() };
        let (token, runs, barrier) = (token.clone(), runs.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            idem.tokens()
                .consume("token:two", &token)
                .lease(Duration::from_secs(15))
                .wait(Duration::from_secs(30))
                .run(|_| async move {
                    runs.hit();
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    Ok::<_, Error>(())
                })
                .await
        }));
    }
    let (mut ok, mut invalid) = (0, 0);
    for t in tasks {
        match t.await.unwrap() {
            Ok(()) => ok += 1,
            Err(Error::TokenInvalid { .. }) => invalid += 1,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!((runs.get(), ok, invalid), (1, 1, 49));
}

async fn purge_removes_expired_tokens(d: Dialect) {
    let fx = Fixture::new(d).await;
    let t = fx.store.tokens().unwrap();
    let (o, lease) = (Owner::random(), Duration::from_secs(30));
    for i in 0..3 {
        t.issue(&format!("short{i}"), Duration::from_secs(1))
            .await
            .unwrap();
    }
    // One of the short ones is being consumed: its expiry still ends it.
    fence(t.take("short0", o, lease).await.unwrap());
    t.issue("long", Duration::from_secs(3600)).await.unwrap();
    assert_eq!(fx.store.purge_expired().await.unwrap(), 0);
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(fx.store.purge_expired().await.unwrap(), 3);
    assert_eq!(fx.store.purge_expired().await.unwrap(), 0);
    // Purged rows are gone (issuing again makes a fresh token), the live one stays.
    fence(t.take("long", o, lease).await.unwrap());
    assert_eq!(
        t.take("short1", o, lease).await.unwrap(),
        TokenTake::Invalid
    );
    // 2,500 more expired tokens: removed in batches of 1,000 by one call.
    let k = fx.tokens();
    let bulk = match d {
        Dialect::Postgres => format!(
            "INSERT INTO {k} SELECT 'bulk' || g, NULL, 0, NULL, now() - interval '1 hour' \
             FROM generate_series(1, 2500) g"
        ),
        Dialect::MySql => format!(
            "SET SESSION max_recursive_iterations = 10000; \
             INSERT INTO {k} WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 2500) \
             SELECT CONCAT('bulk', n), NULL, 0, NULL, UTC_TIMESTAMP(6) - INTERVAL 1 HOUR FROM g"
        ),
        _ => format!(
            "INSERT INTO {k} WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 2500) \
             SELECT 'bulk' || n, NULL, 0, NULL, (unixepoch() - 3600) * 1000000 FROM g"
        ),
    };
    fx.exec(&bulk).await;
    assert_eq!(fx.store.purge_expired().await.unwrap(), 2_500);
    assert_eq!(t.revoke("long").await.unwrap(), Owned::Applied);
}

async fn verify_names_missing_token_table(d: Dialect) {
    let fx = Fixture::new(d).await;
    assert_eq!(fx.store.verify().await.unwrap(), vec![]);
    fx.exec(&format!("DROP TABLE {}", fx.tokens())).await;
    let e = fx.store.verify().await.unwrap_err();
    assert!(
        matches!(&e, StoreError::Config(m) if m.contains(fx.names.tokens_name())),
        "{e:?}"
    );
    // Using it fails closed, and the error says the fix.
    let idem = crate::sql::store::handle(fx.dyn_store());
    let r = idem
        .tokens()
        .issue("token:form", Duration::from_secs(60))
        .await;
    assert!(
        matches!(&r, Err(e @ Error::StoreUnavailable { .. }) if format!("{e:?}").contains("migrate()")),
        "{r:?}"
    );
    // migrate() makes it again.
    fx.store.migrate().await.unwrap();
    assert_eq!(fx.store.verify().await.unwrap(), vec![]);
    idem.tokens()
        .issue("token:form", Duration::from_secs(60))
        .await
        .unwrap();
}

async fn ddl_contains_the_token_table(d: Dialect) {
    let fx = Fixture::new(d).await;
    let sfx = crate::support::sql::suffix();
    let mut names = TableNames::new(&format!("ddl_{sfx}"))
        .unwrap()
        .tokens(&format!("form_tokens_{sfx}"))
        .unwrap();
    if d == Dialect::Postgres {
        names = names.schema(fx.names.schema_name().unwrap()).unwrap();
    }
    let text = ddl(d, &names);
    let table = match d {
        Dialect::Postgres => format!("{}.form_tokens_{sfx}", fx.names.schema_name().unwrap()),
        _ => format!("form_tokens_{sfx}"),
    };
    assert!(
        text.contains(&format!("CREATE TABLE IF NOT EXISTS {table} (")),
        "{text}"
    );
    // Applied twice by a migration tool, the tables serve a store at once.
    fx.exec(&text).await;
    fx.exec(&text).await;
    let store = (*fx.store).clone().with_tables(names.clone());
    assert_eq!(store.verify().await.unwrap(), vec![]);
    let idem = crate::sql::store::handle(Arc::new(store));
    let token = idem
        .tokens()
        .issue("token:ddl", Duration::from_secs(60))
        .await
        .unwrap();
    let runs = crate::support::Counter::default();
    for _ in 0..2 {
        let runs = runs.clone();
        let r = idem
            .tokens()
            .consume("token:ddl", token.as_str())
            .run(move |_| async move {
                runs.hit();
                Ok::<_, Error>(())
            })
            .await;
        assert!(
            matches!(r, Ok(()) | Err(Error::TokenInvalid { .. })),
            "{r:?}"
        );
    }
    assert_eq!(runs.get(), 1);
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

async fn unstorable_token_keys_are_invalid_input(d: Dialect) {
    let fx = Fixture::new(d).await;
    let t = fx.store.tokens().unwrap();
    let mut keys = vec!["k".repeat(idem::store::sql::MAX_KEY_BYTES + 1)];
    if d == Dialect::Postgres {
        keys.push("a\0b".to_owned());
    }
    let (o, lease) = (Owner::random(), Duration::from_secs(30));
    for k in &keys {
        let input =
            |r: Result<(), StoreError>| assert!(matches!(r, Err(StoreError::Input(_))), "{r:?}");
        input(t.issue(k, lease).await);
        input(t.take(k, o, lease).await.map(drop));
        input(t.renew(k, o, lease).await.map(drop));
        input(t.revoke(k).await.map(drop));
        input(t.give_back(k, o).await.map(drop));
    }
}
