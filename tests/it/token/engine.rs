//! One-time tokens under aimed faults (`FaultyStore`), on memory, Redis,
//! Redis Cluster, PostgreSQL, MariaDB and SQLite: a take whose reply is lost
//! is recognised as the same take when it is sent again, a caller dropped or
//! a store blip after a successful body never brings its token back, and a
//! failed body's give-back goes on in the background when its caller is
//! dropped.

use std::sync::Arc;
use std::time::Duration;

use idem::store::Store;
use idem::{Error, FaultyStore, Idem, MemoryStore};

use crate::support::{Counter, handle};

const FORM: &str = "token:engine-form";
const LEASE: Duration = Duration::from_secs(2);
/// The lease of [`submit`]: long, so that a loaded server's round trip fits
/// each operation's budget (a third of the lease).
const SUBMIT_LEASE: Duration = Duration::from_secs(9);

fn faulty_handle(store: Arc<dyn Store>, prefix: &str) -> (Arc<FaultyStore<Arc<dyn Store>>>, Idem) {
    let faulty = Arc::new(FaultyStore::new(store));
    let idem = handle(Arc::clone(&faulty) as Arc<dyn Store>, prefix);
    (faulty, idem)
}

/// A submission of `token` whose body counts its runs and returns `ok`.
async fn submit(idem: &Idem, token: &str, runs: &Counter, ok: bool) -> Result<(), Error> {
    let r = runs.clone();
    idem.tokens()
        .consume(FORM, token)
        .lease(SUBMIT_LEASE)
        .run(move |_| async move {
            r.hit();
            if ok {
                Ok(())
            } else {
                Err(Error::Config("the body fails".into()))
            }
        })
        .await
}

/// The take applies and its reply is lost: the operation layer sends it again
/// with the same owner, the store recognises its own tombstone, and the body
/// runs, once. Another submission then finds the token spent.
pub async fn lost_take_reply_is_the_same_take(store: Arc<dyn Store>) {
    let (faulty, idem) = faulty_handle(store, "eng-tok-lost");
    let token = idem
        .tokens()
        .issue(FORM, Duration::from_secs(60))
        .await
        .unwrap();
    let runs = Counter::default();
    faulty.lose_next_replies(1);
    submit(&idem, token.as_str(), &runs, true)
        .await
        .expect("the retried take is the same take");
    assert_eq!(faulty.counts().lost_replies, 1, "the take's reply was lost");
    let again = submit(&idem, token.as_str(), &runs, true).await;
    assert!(
        matches!(again, Err(Error::TokenInvalid { .. })),
        "{again:?}"
    );
    assert_eq!(runs.get(), 1, "the body ran twice for one token");
}

/// The body succeeded, and its caller is dropped while the store is slow: the
/// take already spent the token, so a resubmission, even after what used to
/// be the lease, is invalid and the body ran once.
pub async fn succeeded_token_stays_spent_after_a_drop(store: Arc<dyn Store>) {
    let (faulty, idem) = faulty_handle(store, "eng-tok-drop");
    let idem = Arc::new(idem);
    let token = idem
        .tokens()
        .issue(FORM, Duration::from_secs(60))
        .await
        .unwrap();
    let runs = Counter::default();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let task = {
        let (idem, runs, faulty, token) = (
            Arc::clone(&idem),
            runs.clone(),
            Arc::clone(&faulty),
            token.to_string(),
        );
        tokio::spawn(async move {
            idem.tokens()
                .consume(FORM, &token)
                .lease(LEASE)
                .run(move |_| async move {
                    runs.hit();
                    // Every store operation from here on takes 500 ms.
                    faulty.set_delay(Some(Duration::from_millis(500)));
                    let _ = done_tx.send(());
                    Ok::<_, Error>(())
                })
                .await
        })
    };
    done_rx.await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    task.abort();
    let _ = task.await;
    faulty.set_delay(None);
    tokio::time::sleep(LEASE + Duration::from_secs(1)).await;
    let again = submit(&idem, token.as_str(), &runs, true).await;
    assert!(
        matches!(again, Err(Error::TokenInvalid { .. })),
        "the spent token came back: {again:?}"
    );
    assert_eq!(runs.get(), 1, "the body ran twice for one token");
}

/// A store blip (1.8 s unavailable) right after the body succeeded: nothing
/// was left to send, the body's value is returned, and the token stays spent.
pub async fn succeeded_token_stays_spent_after_a_blip(store: Arc<dyn Store>) {
    let (faulty, idem) = faulty_handle(store, "eng-tok-blip");
    let token = idem
        .tokens()
        .issue(FORM, Duration::from_secs(60))
        .await
        .unwrap();
    let runs = Counter::default();
    let (r1, f1) = (runs.clone(), Arc::clone(&faulty));
    let out = idem
        .tokens()
        .consume(FORM, token.as_str())
        .lease(LEASE)
        .run(move |_| async move {
            r1.hit();
            f1.set_unavailable(true);
            let f2 = Arc::clone(&f1);
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(1800)).await;
                f2.set_unavailable(false);
            });
            Ok::<_, Error>(7)
        })
        .await;
    assert_eq!(out.unwrap(), 7, "the body's value is returned");
    tokio::time::sleep(Duration::from_millis(1800) + LEASE + Duration::from_secs(1)).await;
    let again = submit(&idem, token.as_str(), &runs, true).await;
    assert!(
        matches!(again, Err(Error::TokenInvalid { .. })),
        "the spent token came back after a blip: {again:?}"
    );
    assert_eq!(runs.get(), 1, "the body ran twice for one token");
}

/// The body fails and its caller is dropped while the give-back is on its
/// way (a slow store): the give-back goes on in the background, so the
/// token comes back and the next submission runs.
pub async fn failed_body_gives_back_after_a_drop(store: Arc<dyn Store>) {
    let (faulty, idem) = faulty_handle(store, "eng-tok-back");
    let idem = Arc::new(idem);
    let token = idem
        .tokens()
        .issue(FORM, Duration::from_secs(60))
        .await
        .unwrap();
    let runs = Counter::default();
    let (failing_tx, failing_rx) = tokio::sync::oneshot::channel::<()>();
    let task = {
        let (idem, runs, faulty, token) = (
            Arc::clone(&idem),
            runs.clone(),
            Arc::clone(&faulty),
            token.to_string(),
        );
        tokio::spawn(async move {
            idem.tokens()
                .consume(FORM, &token)
                .lease(LEASE)
                .run(move |_| async move {
                    runs.hit();
                    faulty.set_delay(Some(Duration::from_millis(300)));
                    let _ = failing_tx.send(());
                    Err::<(), _>(Error::Config("the body fails".into()))
                })
                .await
        })
    };
    // Dropped once its body has failed, while the slow give-back is on its way.
    failing_rx.await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    task.abort();
    let _ = task.await;
    faulty.set_delay(None);
    // The give-back lands in the background: a submission is refused until
    // then (and runs nothing), and accepted after, within a loaded bound.
    let t0 = std::time::Instant::now();
    loop {
        match submit(&idem, token.as_str(), &runs, true).await {
            Ok(()) => break,
            Err(Error::TokenInvalid { .. }) if t0.elapsed() < Duration::from_secs(20) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("the failed body's token was not given back: {e:?}"),
        }
    }
    assert_eq!(runs.get(), 2);
    let failed = submit(&idem, token.as_str(), &runs, false).await;
    assert!(
        matches!(failed, Err(Error::TokenInvalid { .. })),
        "{failed:?}"
    );
}

macro_rules! suite {
    (store = $store:expr, keys = $keys:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn lost_take_reply_is_the_same_take() {
            crate::token::engine::lost_take_reply_is_the_same_take($store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn succeeded_token_stays_spent_after_a_drop() {
            crate::token::engine::succeeded_token_stays_spent_after_a_drop($store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn succeeded_token_stays_spent_after_a_blip() {
            crate::token::engine::succeeded_token_stays_spent_after_a_blip($store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn failed_body_gives_back_after_a_drop() {
            crate::token::engine::failed_body_gives_back_after_a_drop($store).await;
        }
    };
}

crate::support::stores::for_each_store!(suite);

/// A second submission while the first one's body runs is refused at once
/// (the token is spent), not after a wait. Virtual time.
#[tokio::test(start_paused = true)]
async fn concurrent_submission_is_refused_at_once() {
    let idem = Arc::new(handle(Arc::new(MemoryStore::new()), "eng-tok-wait"));
    let token = idem
        .tokens()
        .issue(FORM, Duration::from_secs(600))
        .await
        .unwrap();
    let holder = {
        let (idem, token) = (Arc::clone(&idem), token.to_string());
        tokio::spawn(async move {
            idem.tokens()
                .consume(FORM, &token)
                .run(|_| async {
                    tokio::time::sleep(Duration::from_secs(20)).await;
                    Ok::<_, Error>(())
                })
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t0 = tokio::time::Instant::now();
    let second = idem
        .tokens()
        .consume(FORM, token.as_str())
        .run(|_| async { Ok::<_, Error>(()) })
        .await;
    let waited = t0.elapsed();
    assert!(
        matches!(second, Err(Error::TokenInvalid { .. })),
        "after {waited:?}: {second:?}"
    );
    assert!(waited < Duration::from_millis(10), "waited {waited:?}");
    holder.await.unwrap().unwrap();
}

/// A caller dropped while its take waits in the database (here behind a
/// transaction that locks the token table): its undo (take again, then give
/// back) must queue behind that take, which may still apply. Sent beside it,
/// the undo could give the token back before the first take applied, which
/// then kept the token spent for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_callers_give_back_never_overtakes_its_own_take_postgres() {
    use crate::support::sql::{Fixture, pg_url};
    let fx = Fixture::new(idem::db::Dialect::Postgres).await;
    let idem = handle(fx.dyn_store(), "eng-tok-race");
    let lease = Duration::from_secs(30);
    let token = idem
        .tokens()
        .issue(FORM, Duration::from_secs(600))
        .await
        .unwrap()
        .to_string();
    let pool = sqlx::PgPool::connect(&pg_url()).await.unwrap();
    let mut blocker = pool.begin().await.unwrap();
    let table = format!(
        "{}.{}",
        fx.names.schema_name().unwrap(),
        fx.names.tokens_name()
    );
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "LOCK TABLE {table} IN EXCLUSIVE MODE"
    )))
    .execute(&mut *blocker)
    .await
    .unwrap();
    let runs = Counter::default();
    let caller = {
        let (idem, token, runs) = (idem.clone(), token.clone(), runs.clone());
        tokio::spawn(async move {
            idem.tokens()
                .consume(FORM, &token)
                .lease(lease)
                .run(|_| async move {
                    runs.hit();
                    Ok::<_, Error>(())
                })
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = fx.store.__statements_sent();
    caller.abort();
    let _ = caller.await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        fx.store.__statements_sent(),
        sent,
        "the dropped caller's undo sent a statement beside its queued take"
    );
    blocker.rollback().await.unwrap();
    // The take applies now and its undo gives the token back: the next
    // submission is accepted.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let next = idem
            .tokens()
            .consume(FORM, &token)
            .run(|_| async { Ok::<_, Error>(()) })
            .await;
        match next {
            Ok(_) => break,
            Err(Error::TokenInvalid { .. }) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => panic!("the token stays spent after the dropped caller's take: {e}"),
        }
    }
    assert_eq!(runs.get(), 0, "the dropped caller's body never ran");
}
