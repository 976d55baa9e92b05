//! One-time tokens on memory, Redis, Redis Cluster, PostgreSQL, MariaDB and
//! SQLite (the SQL table's store-level cases are in `sql_token.rs`): 50
//! concurrent submissions of one token run the body once; a failing body gives
//! the token back and a retry succeeds; expired, consumed, foreign-scope and
//! forged tokens are `TokenInvalid`; a crashed holder's token stays spent; the
//! store contract's state cycle (`cycle.rs`); a store that keeps no tokens says so.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem::Error;
use idem::store::Store;

use crate::support::{AppError, Counter, handle};

const FORM: &str = "token:order-form";

/// 50 submissions of one token behind a barrier, with a body delay: one runs,
/// the others find it spent at once.
pub async fn one_execution(store: Arc<dyn Store>) {
    let idem = Arc::new(handle(store, "token-once"));
    let token = idem
        .tokens()
        .issue(FORM, Duration::from_secs(60))
        .await
        .unwrap();
    let runs = Counter::default();
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let (idem, runs, barrier, token) = (
            idem.clone(),
            runs.clone(),
            barrier.clone(),
            token.to_string(),
        );
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            // Fifty takes queue for SQLite's one writer: a 6 s lease gives each
            // 2 s on a loaded machine.
            idem.tokens()
                .consume(FORM, &token)
                .lease(Duration::from_secs(6))
                .run(|fence| async move {
                    assert!(fence.is_valid());
                    runs.hit();
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    Ok::<_, Error>(())
                })
                .await
        }));
    }
    let mut invalid = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(()) => {}
            Err(Error::TokenInvalid { .. }) => invalid += 1,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(runs.get(), 1);
    assert_eq!(invalid, 49);
    let s = idem.stats();
    assert_eq!((s.count("executed"), s.count("token_invalid")), (1, 49));
}

/// A failing body gives the token back; the retry runs and consumes it; a
/// third use is invalid.
pub async fn failure_gives_it_back(store: Arc<dyn Store>) {
    let idem = handle(store, "token-back");
    let token = idem
        .tokens()
        .issue(FORM, Duration::from_secs(60))
        .await
        .unwrap();
    let runs = Counter::default();
    let attempt = |fail: bool| {
        let runs = runs.clone();
        idem.tokens()
            .consume(FORM, token.as_str())
            .lease(Duration::from_secs(2))
            .run(move |_| async move {
                runs.hit();
                if fail {
                    Err(AppError::Business("declined".into()))
                } else {
                    Ok(())
                }
            })
    };
    assert!(matches!(attempt(true).await, Err(AppError::Business(_))));
    attempt(false).await.expect("the given-back token is valid");
    assert!(matches!(
        attempt(false).await,
        Err(AppError::Idem(Error::TokenInvalid { .. }))
    ));
    assert_eq!(runs.get(), 2);
}

/// Expired, forged, malformed and other-scope tokens never run the body.
pub async fn invalid_tokens(store: Arc<dyn Store>) {
    let idem = handle(store, "token-invalid");
    let short = idem
        .tokens()
        .issue(FORM, Duration::from_millis(1000))
        .await
        .unwrap();
    let other = idem
        .tokens()
        .issue(FORM, Duration::from_secs(60))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let forged = "A".repeat(43);
    let runs = Counter::default();
    for (scope, token) in [
        (FORM, short.as_str()),
        (FORM, forged.as_str()),
        (FORM, "not-a-token"),
        ("token:other-form", other.as_str()),
    ] {
        let runs = runs.clone();
        let r = idem
            .tokens()
            .consume(scope, token)
            .run(move |_| async move {
                runs.hit();
                Ok::<_, Error>(())
            })
            .await;
        assert!(
            matches!(r, Err(Error::TokenInvalid { .. })),
            "{token}: {r:?}"
        );
    }
    assert_eq!(runs.get(), 0);
    // The valid one still works in its own scope.
    idem.tokens()
        .consume(FORM, other.as_str())
        .run(|_| async { Ok::<_, Error>(()) })
        .await
        .unwrap();
}

/// A holder whose future is dropped mid-body (a crash) leaves its token
/// spent: at most once, since its body may have done its work. A retry is
/// `TokenInvalid` at once, and still after what used to be a lease.
pub async fn crashed_holder_spends_it(store: Arc<dyn Store>) {
    let idem = Arc::new(handle(store, "token-crash"));
    let token = idem
        .tokens()
        .issue(FORM, Duration::from_secs(60))
        .await
        .unwrap();
    let lease = Duration::from_secs(1);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let crashed = {
        let (idem, token) = (idem.clone(), token.to_string());
        tokio::spawn(async move {
            idem.tokens()
                .consume(FORM, &token)
                .lease(lease)
                .run(|_| async move {
                    let _ = tx.send(());
                    std::future::pending::<()>().await;
                    Ok::<_, Error>(())
                })
                .await
        })
    };
    rx.await.unwrap();
    crashed.abort();
    let runs = Counter::default();
    let retry = || {
        let r = runs.clone();
        idem.tokens()
            .consume(FORM, token.as_str())
            .run(move |_| async move {
                r.hit();
                Ok::<_, Error>(())
            })
    };
    let t0 = Instant::now();
    let r = retry().await;
    assert!(matches!(r, Err(Error::TokenInvalid { .. })), "{r:?}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    tokio::time::sleep(lease * 2).await;
    let r = retry().await;
    assert!(matches!(r, Err(Error::TokenInvalid { .. })), "{r:?}");
    assert_eq!(runs.get(), 0);
}

/// The store contract's cycle (`cycle.rs`) on this store, one instance.
pub async fn store_cycle(store: Arc<dyn Store>) {
    let t = store.tokens().expect("the store keeps tokens");
    crate::token::cycle::cycle(t, t).await;
}

macro_rules! token_suite {
    (store = $store:expr, keys = $keys:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn one_execution() {
            crate::token::stores::one_execution($store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn failure_gives_it_back() {
            crate::token::stores::failure_gives_it_back($store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn invalid_tokens() {
            crate::token::stores::invalid_tokens($store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn crashed_holder_spends_it() {
            crate::token::stores::crashed_holder_spends_it($store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn store_cycle() {
            crate::token::stores::store_cycle($store).await;
        }
    };
}
pub(crate) use token_suite;

crate::support::stores::for_each_store!(crate::token::stores::token_suite);

/// A store that keeps no tokens (a third-party `Store` that does not override
/// `tokens()`): every token call is `Error::Config`, and no body runs.
#[tokio::test]
async fn store_without_tokens_is_config() {
    let idem = handle(Arc::new(NoTokens(idem::MemoryStore::new())), "token-none");
    let r = idem.tokens().issue(FORM, Duration::from_secs(60)).await;
    assert!(matches!(r, Err(Error::Config(_))), "{r:?}");
    let token = "A".repeat(43);
    let runs = Counter::default();
    let r2 = runs.clone();
    let r = idem
        .tokens()
        .consume(FORM, &token)
        .run(move |_| async move {
            r2.hit();
            Ok::<_, Error>(())
        })
        .await;
    assert!(matches!(r, Err(Error::Config(_))), "{r:?}");
    assert_eq!(runs.get(), 0);
}

/// The memory store's records without its tokens.
#[derive(Debug)]
struct NoTokens(idem::MemoryStore);

impl Store for NoTokens {
    fn name(&self) -> &'static str {
        "no-tokens"
    }
    fn claim<'a>(
        &'a self,
        req: idem::store::ClaimRequest<'a>,
    ) -> idem::store::BoxFuture<'a, Result<idem::store::Claim, idem::store::StoreError>> {
        self.0.claim(req)
    }
    fn complete<'a>(
        &'a self,
        key: &'a str,
        owner: idem::store::Owner,
        payload: &'a [u8],
        ttl: Duration,
    ) -> idem::store::BoxFuture<'a, Result<idem::store::Owned, idem::store::StoreError>> {
        self.0.complete(key, owner, payload, ttl)
    }
    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: idem::store::Owner,
    ) -> idem::store::BoxFuture<'a, Result<idem::store::Owned, idem::store::StoreError>> {
        self.0.release(key, owner)
    }
    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: idem::store::Owner,
        lease: Duration,
    ) -> idem::store::BoxFuture<'a, Result<idem::store::Owned, idem::store::StoreError>> {
        self.0.renew(key, owner, lease)
    }
    fn inspect<'a>(
        &'a self,
        key: &'a str,
    ) -> idem::store::BoxFuture<'a, Result<Option<idem::store::RecordState>, idem::store::StoreError>>
    {
        self.0.inspect(key)
    }
    fn forget<'a>(
        &'a self,
        key: &'a str,
    ) -> idem::store::BoxFuture<'a, Result<bool, idem::store::StoreError>> {
        self.0.forget(key)
    }
    fn purge_expired(&self) -> idem::store::BoxFuture<'_, Result<u64, idem::store::StoreError>> {
        self.0.purge_expired()
    }
    fn verify(
        &self,
    ) -> idem::store::BoxFuture<'_, Result<Vec<idem::store::Warning>, idem::store::StoreError>>
    {
        self.0.verify()
    }
}

// ---- #[idempotent(token = "<t>")] ----

#[idem::idempotent(key = "tok-order:<req_id>", lease = "2s", token = "<form_token>", handle = idem)]
async fn submit(
    idem: &idem::Idem,
    req_id: u32,
    form_token: &str,
    runs: &Counter,
) -> Result<u32, AppError> {
    runs.hit();
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok(req_id * 10)
}

/// The macro option: 20 concurrent submissions with one token and distinct
/// request ids run once (the others find the token consumed); a repeat of the
/// winning request replays without the token; a forged token never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn macro_token_option() {
    let idem = Arc::new(handle(Arc::new(idem::MemoryStore::new()), "token-macro"));
    let token = idem
        .tokens()
        .issue("token:tok-order", Duration::from_secs(60))
        .await
        .unwrap()
        .into_string();
    let runs = Counter::default();
    let barrier = Arc::new(tokio::sync::Barrier::new(20));
    let mut tasks = Vec::new();
    for i in 0..20u32 {
        let (idem, token, runs, barrier) =
            (idem.clone(), token.clone(), runs.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            (i, submit(&idem, i, &token, &runs).await)
        }));
    }
    let mut winner = None;
    for t in tasks {
        match t.await.unwrap() {
            (i, Ok(v)) => {
                assert_eq!(v, i * 10);
                assert!(winner.replace(i).is_none(), "two submissions ran");
            }
            (_, Err(AppError::Idem(Error::TokenInvalid { .. }))) => {}
            (_, Err(e)) => panic!("{e:?}"),
        }
    }
    let winner = winner.expect("one submission ran");
    assert_eq!(runs.get(), 1);
    assert_eq!(
        submit(&idem, winner, &token, &runs).await.unwrap(),
        winner * 10
    );
    let forged = "B".repeat(43);
    assert!(matches!(
        submit(&idem, 99, &forged, &runs).await,
        Err(AppError::Idem(Error::TokenInvalid { .. }))
    ));
    assert_eq!(runs.get(), 1);
}
