//! A token whose body succeeded after its lease lapsed is spent, on every store.
//!
//! Submission A takes the token and its body outlives its lease (`max_hold`
//! stops renewal), so submission B takes the lapsed token over. A's body then
//! succeeds while B holds the token: A's consume finds it no longer A's, and
//! revokes it whoever holds it. B's body fails and gives the token back, which
//! finds nothing to give back, and submission C is refused. The finish used to
//! wait for B to let go and then take the token again, and lost that race to
//! the next submission (token simulation, seed 3059487).

use std::sync::Arc;
use std::time::Duration;

use idem::Error;
use idem::store::Store;

use crate::support::{AppError, Counter, handle};

const FORM: &str = "token:lapsed-form";

pub async fn lapsed_success_spends_it(store: Arc<dyn Store>) {
    let idem = Arc::new(handle(store, "token-lapsed"));
    let token = idem
        .tokens()
        .issue(FORM, Duration::from_secs(60))
        .await
        .unwrap()
        .into_string();
    let runs = Counter::default();
    let (b_started, a_may_end) = tokio::sync::oneshot::channel::<()>();
    let (a_ended, b_may_end) = tokio::sync::oneshot::channel::<()>();
    let (a_started, b_may_start) = tokio::sync::oneshot::channel::<()>();
    let a = {
        let (idem, token, runs) = (idem.clone(), token.clone(), runs.clone());
        tokio::spawn(async move {
            idem.tokens()
                .consume(FORM, &token)
                .lease(Duration::from_secs(1))
                .max_hold(Duration::from_secs(1))
                .run(|_| async move {
                    runs.hit();
                    let _ = a_started.send(());
                    // Ends only once B holds the token: A's lease has lapsed.
                    let _ = a_may_end.await;
                    Ok::<_, AppError>("a")
                })
                .await
        })
    };
    let b = {
        let (idem, token, runs) = (idem.clone(), token.clone(), runs.clone());
        tokio::spawn(async move {
            let _ = b_may_start.await;
            idem.tokens()
                .consume(FORM, &token)
                .lease(Duration::from_secs(10))
                .wait(Duration::from_secs(30))
                .run(|_| async move {
                    runs.hit();
                    let _ = b_started.send(());
                    let _ = b_may_end.await;
                    Err::<&str, _>(AppError::Transient("b's body fails".into()))
                })
                .await
        })
    };
    assert_eq!(a.await.unwrap().unwrap(), "a", "A's body succeeded");
    let _ = a_ended.send(());
    assert!(b.await.unwrap().is_err(), "B's body failed");
    assert_eq!(runs.get(), 2, "A ran, and B took A's lapsed token over");
    let c = idem
        .tokens()
        .consume(FORM, &token)
        .wait(Duration::from_secs(5))
        .run(|_| async { Ok::<_, AppError>("c") })
        .await;
    assert!(
        matches!(c, Err(AppError::Idem(Error::TokenInvalid { .. }))),
        "a token spent by A's success was accepted again: {c:?}"
    );
    assert_eq!(runs.get(), 2);
}

macro_rules! lapsed_suite {
    (store = $store:expr, keys = $keys:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn lapsed_success_spends_it() {
            crate::token::lapsed::lapsed_success_spends_it($store).await;
        }
    };
}
pub(crate) use lapsed_suite;

crate::support::stores::for_each_store!(crate::token::lapsed::lapsed_suite);
