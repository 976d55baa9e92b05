//! The SQL stores' one-time token table at the store level (the behaviour
//! through `idem.tokens()` runs in `stores.rs`): the state cycle through two
//! store instances (two processes) over one table, concurrent takes, purge,
//! verify, the DDL and unstorable keys. Each case runs per database on fresh
//! tables; the cycle runs on every store, so the expected answers are the
//! contract's, not the SQL code's.

use std::sync::Arc;
use std::time::Duration;

use idem::db::Dialect;

use idem::store::sql::{TableNames, ddl};
use idem::store::token::{TokenStore, TokenTake};
use idem::store::{Owner, StoreError};
use idem::{Error, Store};

use crate::support::sql::Fixture;
use crate::token::cycle::{cycle, fence};

crate::support::sql::per_database!(
    cycle_through_two_instances,
    statements_per_consume,
    concurrent_takes_one_winner,
    two_instances_one_execution,
    purge_removes_expired_tokens,
    verify_names_missing_token_table,
    ddl_contains_the_token_table,
    unstorable_token_keys_are_invalid_input,
);

async fn cycle_through_two_instances(d: Dialect) {
    let fx = Fixture::new(d).await;
    let other = fx.another_instance().await;
    let a = fx.store.tokens().expect("SQL keeps tokens");
    let b = other.tokens().expect("SQL keeps tokens");
    cycle(a, b).await;
}

/// Statements per consume, pinned (`SqlStore::__statements_sent`): the issue
/// is one, a consume whose body succeeds is one (the take), a failed body
/// adds its give-back, and a second submission is one read-and-refuse.
async fn statements_per_consume(d: Dialect) {
    let fx = Fixture::new(d).await;
    let idem = crate::sql::store::handle(fx.dyn_store());
    let sent = || fx.store.__statements_sent();
    let (idem, tokens) = (&idem, idem.tokens());
    let consume = |t: String, ok: bool| async move {
        idem.tokens()
            .consume("token:rt", &t)
            .run(move |_| async move {
                if ok {
                    Ok(())
                } else {
                    Err(Error::Config("the body fails".into()))
                }
            })
            .await
    };
    let before = sent();
    let token = tokens.issue("token:rt", Duration::from_secs(60)).await;
    let token = token.unwrap().into_string();
    assert_eq!(sent() - before, 1, "{d:?} issue");
    let before = sent();
    assert!(consume(token.clone(), false).await.is_err());
    assert_eq!(sent() - before, 2, "{d:?} failed body: take + give-back");
    let before = sent();
    consume(token.clone(), true).await.unwrap();
    assert_eq!(sent() - before, 1, "{d:?} succeeded body: the take alone");
    let before = sent();
    let again = consume(token, true).await;
    assert!(
        matches!(again, Err(Error::TokenInvalid { .. })),
        "{again:?}"
    );
    assert_eq!(sent() - before, 1, "{d:?} second submission");
}

/// 40 takes of one token with distinct owners, half through another store
/// instance (another process's pool), behind a barrier: exactly one is
/// `Taken`, all others find it spent (`Invalid`); five tokens in a row.
async fn concurrent_takes_one_winner(d: Dialect) {
    let fx = Fixture::new(d).await;
    let other = Arc::new(fx.another_instance().await);
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
                t.take(&k, Owner::fresh()).await.unwrap()
            }));
        }
        let (mut taken, mut spent) = (0, 0);
        for t in tasks {
            match t.await.unwrap() {
                TokenTake::Taken { .. } => taken += 1,
                TokenTake::Invalid => spent += 1,
            }
        }
        assert_eq!((taken, spent), (1, 39), "round {round}");
    }
}

/// 50 submissions of one token through two handles on two store instances:
/// the body runs once, every other submission finds the token spent. Each
/// instance has a pool of 4, and the lease is 15 s, so each take has 5 s on
/// a loaded machine; nothing here is timed.
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
    let o = Owner::fresh();
    for i in 0..3 {
        t.issue(&format!("short{i}"), Duration::from_secs(1))
            .await
            .unwrap();
    }
    // One of the short ones is spent: its expiry still ends it.
    fence(t.take("short0", o).await.unwrap());
    t.issue("long", Duration::from_secs(3600)).await.unwrap();
    assert_eq!(fx.store.purge_expired().await.unwrap(), 0);
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(fx.store.purge_expired().await.unwrap(), 3);
    assert_eq!(fx.store.purge_expired().await.unwrap(), 0);
    // Purged rows are gone (issuing again makes a fresh token), the live one stays.
    fence(t.take("long", o).await.unwrap());
    assert_eq!(t.take("short1", o).await.unwrap(), TokenTake::Invalid);
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
    // The live spent one stays, the take that spent it still its own.
    fence(t.take("long", o).await.unwrap());
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
    let (o, lease) = (Owner::fresh(), Duration::from_secs(30));
    for k in &keys {
        let input =
            |r: Result<(), StoreError>| assert!(matches!(r, Err(StoreError::Input(_))), "{r:?}");
        input(t.issue(k, lease).await);
        input(t.take(k, o).await.map(drop));
        input(t.give_back(k, o).await.map(drop));
    }
}
