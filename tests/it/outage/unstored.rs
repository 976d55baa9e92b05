//! A result that was never stored must not look stored (issue 19, case 4): a
//! black hole longer than the lease takes the claim's record away while the body
//! runs (its renewals are held until the heal, after the record expired), so
//! `complete` finds nothing to complete, or gets no answer at all. The caller
//! sees `is_stored() == false` and the `not_stored` outcome (in `reported` and in
//! the counters), and a retry runs the body again, as it must.

use std::time::{Duration, Instant};

use idem::observe::CallOutcome;
use idem::{Error, How, reported};

use super::Rig;
use crate::support::Counter;

/// This test waits for the lease to lapse: the shortest lease tests may use.
const SHORT_LEASE: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn result_lost_in_a_black_hole_is_reported_not_stored() {
    let rig = Rig::start(Duration::from_millis(500)).await;
    let idem = &rig.idem;
    let runs = Counter::default();
    let call = |id: &'static str, body: Duration| {
        let runs = runs.clone();
        reported(
            idem.guard("unstored", &[&id])
                .lease(SHORT_LEASE)
                .run(move || async move {
                    let n = runs.hit();
                    tokio::time::sleep(body).await;
                    Ok::<_, Error>(n)
                }),
        )
    };

    // (hole starts, hole ends) after the call starts, and the body's length:
    // "after-heal" ends its body after the heal (its `complete` finds the record
    // expired: not the owner); "in-hole" ends it inside the hole (its `complete`
    // gets no answer within its budget).
    let cases = [
        ("after-heal", (200, 1_800), 2_500),
        ("in-hole", (200, 2_600), 1_500),
    ];
    for (id, (from, to), body) in cases {
        let t0 = Instant::now();
        let hole = async {
            tokio::time::sleep(Duration::from_millis(from)).await;
            rig.proxy.black_hole();
            tokio::time::sleep(Duration::from_millis(to - from)).await;
            rig.proxy.heal();
        };
        let ((r, report), ()) = tokio::join!(call(id, Duration::from_millis(body)), hole);
        let out = r.unwrap_or_else(|e| panic!("{id}: {e:?}"));
        let report = report.unwrap();
        println!("{id}: {:?} after {:?}", report.outcome(), t0.elapsed());
        assert_eq!(out.how(), How::Executed, "{id}: the body ran");
        assert!(!out.is_stored(), "{id}: reported as stored");
        assert_eq!(report.outcome(), CallOutcome::NotStored, "{id}");

        // Nothing was stored: the retry runs the body again (once the breaker,
        // if the failed renewals opened it, lets it through).
        let c = &call;
        let again = once_admitted(Duration::from_secs(5), move || async move {
            c(id, Duration::ZERO).await.0
        })
        .await
        .unwrap_or_else(|e| panic!("{id}: {e:?}"));
        assert_eq!(
            (again.how(), again.is_stored()),
            (How::Executed, true),
            "{id}"
        );
    }
    assert_eq!(runs.get(), 4, "each case: the lost run and its retry");
    let stats = idem.stats();
    assert_eq!(
        (stats.count("not_stored"), stats.count("executed")),
        (2, 2),
        "{stats:?}"
    );
}

/// The other side of the case above: a `complete` whose outage heals within the
/// claim's lease. It fails within the call's budget and opens the breaker
/// (threshold 1); the call returns `not_stored`, and the `complete` goes on in
/// the background, waiting the open breaker out (it gave up there once, and the
/// retry after the lapse ran the body a second time). The store comes back at
/// 1.2 s, long before the 3 s lease lapses: the result is stored, and every
/// retry replays it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn result_whose_outage_heals_within_the_lease_is_stored_in_the_background() {
    let rig = Rig::start_with(1, Duration::from_millis(300)).await;
    let idem = &rig.idem;
    let runs = Counter::default();
    let call =
        |body: Duration| {
            let runs = runs.clone();
            reported(idem.guard("healed", &[&"order-7"]).lease(super::LEASE).run(
                move || async move {
                    let n = runs.hit();
                    tokio::time::sleep(body).await;
                    Ok::<_, Error>(n)
                },
            ))
        };
    let hole = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        rig.proxy.cut();
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        rig.proxy.heal();
    };
    let ((r, report), ()) = tokio::join!(call(Duration::from_millis(300)), hole);
    let first = r.expect("the body's own value");
    assert_eq!(first.how(), How::Executed);
    assert!(!first.is_stored(), "the complete met the cut");
    assert_eq!(report.unwrap().outcome(), CallOutcome::NotStored);

    // Retries until the breaker lets calls through again, all within the lease.
    let c = &call;
    let again = once_admitted(Duration::from_secs(10), move || async move {
        c(Duration::ZERO).await.0
    })
    .await
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert!(
        matches!(again.how(), How::Replayed | How::Waited),
        "the retry found the stored result, not {:?}",
        again.how()
    );
    assert_eq!(*again.value(), 1, "the first run's value");
    assert_eq!(runs.get(), 1, "the body ran once");
}

/// Calls `f` until the breaker lets it through: `StoreUnavailable` is asked
/// again every 50 ms for up to `within`; any other answer is returned.
async fn once_admitted<T, Fut>(within: Duration, mut f: impl FnMut() -> Fut) -> Result<T, Error>
where
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    let deadline = Instant::now() + within;
    loop {
        match f().await {
            Err(Error::StoreUnavailable { .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other,
        }
    }
}
