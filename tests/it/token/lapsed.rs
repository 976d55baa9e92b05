//! A token holds no lease that could lapse, on every store.
//!
//! Submission A spends the token and its body outlives A's lease. Submission
//! B, which used to take a lapsed token over, is refused at once while A's
//! body still runs; A's body then succeeds, and submission C is refused too.
//! When A's body fails instead, the token comes back, and only then is the
//! next submission accepted.

use std::sync::Arc;
use std::time::Duration;

use idem::Error;
use idem::store::Store;

use crate::support::{AppError, Counter, handle};

const FORM: &str = "token:lapsed-form";

pub async fn no_lease_lapses(store: Arc<dyn Store>) {
    let idem = Arc::new(handle(store, "token-lapsed"));
    let runs = Counter::default();
    for a_fails in [false, true] {
        let token = idem
            .tokens()
            .issue(FORM, Duration::from_secs(60))
            .await
            .unwrap()
            .into_string();
        let (a_started, started) = tokio::sync::oneshot::channel::<()>();
        let (b_refused, a_may_end) = tokio::sync::oneshot::channel::<()>();
        let a = {
            let (idem, token, runs) = (idem.clone(), token.clone(), runs.clone());
            tokio::spawn(async move {
                idem.tokens()
                    .consume(FORM, &token)
                    .lease(Duration::from_secs(1))
                    .run(|_| async move {
                        runs.hit();
                        let _ = a_started.send(());
                        // Past A's lease, and until B has been refused.
                        tokio::time::sleep(Duration::from_millis(1500)).await;
                        let _ = a_may_end.await;
                        if a_fails {
                            Err(AppError::Transient("a's body fails".into()))
                        } else {
                            Ok("a")
                        }
                    })
                    .await
            })
        };
        let submit = || {
            let runs = runs.clone();
            idem.tokens()
                .consume(FORM, &token)
                .run(move |_| async move {
                    runs.hit();
                    Ok::<_, AppError>("next")
                })
        };
        started.await.unwrap();
        tokio::time::sleep(Duration::from_millis(1300)).await;
        let b = submit().await;
        assert!(
            matches!(b, Err(AppError::Idem(Error::TokenInvalid { .. }))),
            "a token A spent was accepted while A's body ran: {b:?}"
        );
        let _ = b_refused.send(());
        let a = a.await.unwrap();
        assert_eq!(a.is_err(), a_fails, "{a:?}");
        let c = submit().await;
        if a_fails {
            assert_eq!(c.unwrap(), "next", "A's failed body gave the token back");
        } else {
            assert!(
                matches!(c, Err(AppError::Idem(Error::TokenInvalid { .. }))),
                "a token spent by A's success was accepted again: {c:?}"
            );
        }
    }
    assert_eq!(
        runs.get(),
        3,
        "A twice, and the submission after A's failure"
    );
}

macro_rules! lapsed_suite {
    (store = $store:expr, keys = $keys:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn no_lease_lapses() {
            crate::token::lapsed::no_lease_lapses($store).await;
        }
    };
}
pub(crate) use lapsed_suite;

crate::support::stores::for_each_store!(crate::token::lapsed::lapsed_suite);
