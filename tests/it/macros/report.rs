//! How the caller of an `#[idempotent]` function learns how its call went
//! (`idem::reported`), on every record store the macro tests use: what the HTTP
//! layer needs for `Idempotent-Replayed`, per request, under concurrency.

use std::time::Duration;

use idem::observe::CallOutcome;
use idem::{Idem, reported};
use tokio::sync::Notify;

use crate::macros::support::{AppError, Counter, handles};

/// The body runs for one operation budget (the default 1 s op timeout, a third of
/// the 3 s lease) plus 1 s slack after it says it started: long enough for a
/// duplicate sent then to find it running, however slow the machine.
#[idem::idempotent(key = "report-pay:<order>", lease = "3s", handle = idem)]
async fn pay(
    idem: &Idem,
    runs: &Counter,
    started: &Notify,
    order: &str,
) -> Result<String, AppError> {
    let n = runs.hit();
    started.notify_one();
    tokio::time::sleep(Duration::from_secs(2)).await;
    Ok(format!("paid {order} #{n}"))
}

#[tokio::test]
async fn each_caller_sees_its_own_outcome() {
    for (idem, _dir) in handles().await {
        let runs = Counter::default();
        let started = Notify::new();
        // The second call starts once the first one's body runs (not after a
        // fixed sleep, which a loaded machine can outlast before the first claims).
        let (first, second) = tokio::join!(reported(pay(&idem, &runs, &started, "o-1")), async {
            started.notified().await;
            reported(pay(&idem, &runs, &Notify::new(), "o-1")).await
        });
        let (v1, r1) = (first.0.unwrap(), first.1.expect("a report"));
        let (v2, r2) = (second.0.unwrap(), second.1.expect("a report"));
        assert_eq!(v1, v2);
        assert_eq!(
            (r1.outcome(), r1.is_replay()),
            (CallOutcome::Executed, false)
        );
        assert_eq!((r2.outcome(), r2.is_replay()), (CallOutcome::Waited, true));
        assert!(r1.fence().is_some_and(|f| f.is_valid()));
        assert_eq!(
            r1.fence(),
            r2.fence(),
            "the waiter got the first call's value"
        );
        let (v3, r3) = reported(pay(&idem, &runs, &Notify::new(), "o-1")).await;
        assert_eq!(v3.unwrap(), v1);
        assert_eq!(r3.unwrap().outcome(), CallOutcome::Replayed);
        assert_eq!(runs.get(), 1);
        // No guarded call inside: no report.
        let (n, none) = reported(async { 5 }).await;
        assert_eq!((n, none), (5, None));
    }
}
