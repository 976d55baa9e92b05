//! What the guard answers when the store or the body fails: fail closed, the
//! business backstop, terminal errors replayed, codec and hostile-key cases.

use std::sync::Arc;
use std::time::Duration;

use idem::{Error, FaultyStore, Hooks, How, Store, Terminal};

use super::suite::{Res, short};
use crate::support::{AppError, Counter, order_rows, sqlite_business_db};

pub async fn unavailable_fails_closed(store: Arc<dyn Store>) {
    let faulty = Arc::new(FaultyStore::new(store));
    let idem = short(faulty.clone(), "un");
    faulty.set_unavailable(true);
    let runs = Counter::default();
    let r = idem
        .guard("down", &[&"k"])
        .run(|| {
            let runs = runs.clone();
            async move {
                runs.hit();
                Res::Ok(1)
            }
        })
        .await;
    match r {
        Err(AppError::Idem(Error::StoreUnavailable { key, .. })) => assert!(key.contains("down")),
        other => panic!("expected StoreUnavailable, got {other:?}"),
    }
    assert_eq!(runs.get(), 0, "fail closed: the body did not run");
}

async fn insert_order(pool: &sqlx::SqlitePool, order_no: &str, runs: &Counter) -> Res<i64> {
    runs.hit();
    let id =
        sqlx::query_scalar("INSERT INTO orders (order_no, amount) VALUES (?, 100) RETURNING id")
            .bind(order_no)
            .fetch_one(pool)
            .await?;
    Ok(id)
}

async fn find_order(pool: &sqlx::SqlitePool, order_no: &str) -> Res<i64> {
    Ok(
        sqlx::query_scalar("SELECT id FROM orders WHERE order_no = ?")
            .bind(order_no)
            .fetch_one(pool)
            .await?,
    )
}

pub async fn degraded_backstop_one_row(store: Arc<dyn Store>) {
    let (pool, _dir) = sqlite_business_db().await;
    let faulty = Arc::new(FaultyStore::new(store));
    let idem = short(faulty.clone(), "dg");
    let runs = Counter::default();
    let call = || {
        let (pool, runs) = (pool.clone(), runs.clone());
        let pool2 = pool.clone();
        idem.guard("order", &[&"no-1"])
            .backstop("uk_order_no")
            .degrade_to_backstop()
            .run_with(
                Hooks::new()
                    .detect(idem::std_error)
                    .on_conflict(move || async move { find_order(&pool2, "no-1").await }),
                move || async move { insert_order(&pool, "no-1", &runs).await },
            )
    };
    faulty.set_unavailable(true);
    let first = call().await.unwrap();
    assert_eq!(first.how(), How::Degraded);
    let second = call().await.unwrap();
    assert_eq!(second.how(), How::Backstop);
    assert_eq!(first.value(), second.value());
    faulty.set_unavailable(false);
    tokio::time::sleep(Duration::from_millis(2100)).await; // breaker cooldown
    let third = call().await.unwrap();
    assert!(third.is_replay(), "{third:?}");
    assert_eq!(
        order_rows(&pool, "no-1").await,
        1,
        "exactly one business row"
    );
    assert!(idem.stats().backstop_hits() >= 1);
}

pub async fn backstop_on_conflict_replays(store: Arc<dyn Store>) {
    let (pool, _dir) = sqlite_business_db().await;
    let idem = short(store, "bs");
    let runs = Counter::default();
    // Another path already created the order (e.g. before idem was deployed, or a lost key).
    sqlx::query("INSERT INTO orders (order_no, amount) VALUES ('no-7', 100)")
        .execute(&pool)
        .await
        .unwrap();
    let pool2 = pool.clone();
    let out = idem
        .guard("order", &[&"no-7"])
        .backstop("uk_order_no")
        .run_with(
            Hooks::new()
                .detect(idem::std_error)
                .on_conflict(move || async move { find_order(&pool2, "no-7").await }),
            || {
                let (pool, runs) = (pool.clone(), runs.clone());
                async move { insert_order(&pool, "no-7", &runs).await }
            },
        )
        .await
        .unwrap();
    assert_eq!(out.how(), How::Backstop);
    assert_eq!(*out.value(), find_order(&pool, "no-7").await.unwrap());
    // The looked-up result was stored: the next duplicate is a plain replay.
    // (A backstop needs detection even on a replay: without it the call is refused.)
    let again = idem
        .guard("order", &[&"no-7"])
        .backstop("uk_order_no")
        .run_with(Hooks::new().detect(idem::std_error), || async {
            Res::Ok(-1i64)
        })
        .await
        .unwrap();
    assert_eq!((again.how(), again.value()), (How::Replayed, out.value()));
    assert_eq!(order_rows(&pool, "no-7").await, 1);
    assert_eq!(idem.stats().backstop_hits(), 1);
}

pub async fn backstop_without_lookup_is_duplicate(store: Arc<dyn Store>) {
    let (pool, _dir) = sqlite_business_db().await;
    let idem = short(store, "bd");
    let runs = Counter::default();
    sqlx::query("INSERT INTO orders (order_no, amount) VALUES ('no-8', 1)")
        .execute(&pool)
        .await
        .unwrap();
    let r = idem
        .guard("order", &[&"no-8"])
        .backstop("uk_order_no")
        .run_with(Hooks::new().detect(idem::std_error), || {
            let (pool, runs) = (pool.clone(), runs.clone());
            async move { insert_order(&pool, "no-8", &runs).await }
        })
        .await;
    match r {
        Err(AppError::Idem(Error::Duplicate { constraint, .. })) => {
            assert_eq!(constraint, "uk_order_no")
        }
        other => panic!("expected Duplicate, got {other:?}"),
    }
    // A unique violation of another constraint is the body's own error, not a backstop hit.
    let r = idem
        .guard("order", &[&"no-9"])
        .backstop("uk_other")
        .run_with(Hooks::new().detect(idem::std_error), || {
            let (pool, runs) = (pool.clone(), runs.clone());
            async move { insert_order(&pool, "no-8", &runs).await }
        })
        .await;
    assert!(
        matches!(
            r,
            Err(AppError::Db(_)) | Err(AppError::Idem(Error::Duplicate { .. }))
        ),
        "{r:?}"
    );
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
enum PayError {
    Declined(String),
    Retryable,
    Idem(String),
}
impl From<Error> for PayError {
    fn from(e: Error) -> Self {
        PayError::Idem(e.to_string())
    }
}

pub async fn terminal_error_replayed(store: Arc<dyn Store>) {
    let idem = short(store, "te");
    let runs = Counter::default();
    let call = |k: &'static str, err: PayError| {
        let runs = runs.clone();
        let err = std::sync::Mutex::new(Some(err));
        idem.guard("pay", &[&k]).run_with(
            Hooks::new().terminal(Terminal::new(|e: &PayError| {
                matches!(e, PayError::Declined(_))
            })),
            move || async move {
                runs.hit();
                Err::<u32, _>(err.lock().unwrap().take().unwrap())
            },
        )
    };
    assert_eq!(
        call("a", PayError::Declined("card".into())).await,
        Err(PayError::Declined("card".into()))
    );
    assert_eq!(
        call("a", PayError::Retryable).await,
        Err(PayError::Declined("card".into())),
        "terminal error replayed"
    );
    assert_eq!(runs.get(), 1);
    assert_eq!(
        call("b", PayError::Retryable).await,
        Err(PayError::Retryable)
    );
    assert_eq!(
        call("b", PayError::Retryable).await,
        Err(PayError::Retryable)
    );
    assert_eq!(runs.get(), 3, "non-terminal errors release the key");
}

pub async fn version_mismatch_is_codec(store: Arc<dyn Store>) {
    let idem = short(store, "vm");
    idem.guard("v", &[&"k"])
        .version(1)
        .run(|| async { Res::Ok(1u8) })
        .await
        .unwrap();
    let r = idem
        .guard("v", &[&"k"])
        .version(2)
        .run(|| async { Res::Ok(2u8) })
        .await;
    match r {
        Err(AppError::Idem(Error::Codec { key, detail })) => {
            assert!(key.ends_with(":v:k"), "{key}");
            assert!(detail.contains("version 1"), "{detail}");
        }
        other => panic!("expected Codec, got {other:?}"),
    }
    // Same version, different type: a typed error too, never garbage.
    let r = idem
        .guard("v", &[&"k"])
        .version(1)
        .run(|| async { Res::Ok(String::from("x")) })
        .await;
    assert!(
        matches!(r, Err(AppError::Idem(Error::Codec { .. }))),
        "{r:?}"
    );
}

pub async fn hostile_key_parts(store: Arc<dyn Store>) {
    let idem = short(store, "hk");
    let big = "x".repeat(10_000);
    let parts: Vec<String> = vec![
        "a:b".into(),
        "a%3Ab".into(),
        "{tag}".into(),
        "%7Btag%7D".into(),
        "<user_id>".into(),
        "line\nbreak".into(),
        "nul\0".into(),
        big.clone(),
        format!("{big}y"),
        "订单-🚀".into(),
        "".into(),
        " ".into(),
        "*?[]".into(),
    ];
    let runs = Counter::default();
    for (i, p) in parts.iter().enumerate() {
        for _ in 0..2 {
            let out = idem
                .guard("hostile", &[&p.as_str(), &"tail"])
                .run(|| {
                    let runs = runs.clone();
                    async move {
                        runs.hit();
                        Res::Ok(i)
                    }
                })
                .await
                .unwrap();
            assert_eq!(*out.value(), i, "part {i} must not collide with another");
        }
    }
    assert_eq!(runs.get(), parts.len());
}
