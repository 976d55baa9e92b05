//! A scripted outage, one call at a time so every counter is exact: healthy
//! calls, a black hole (the first claims pay their budget and open the breaker,
//! the rest are refused at once), the heal, the probe, and what the store and the
//! constraint do with the keys afterwards. Failures that arrive while the breaker
//! is open must not delay the probe (issue 19: the breaker outlived the outage
//! by ≈ 1.1 s).

use std::time::{Duration, Instant};

use idem::observe::CallOutcome;
use idem::{How, reported};

use super::{Mode, Rig};

/// Long enough that the open-breaker phase below (15 quick calls) ends inside it
/// even on a loaded machine, so no probe sends a claim into the black hole.
const COOLDOWN: Duration = Duration::from_secs(3);

fn no(prefix: &str, i: usize) -> String {
    format!("{prefix}{i}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_outage_exact_counters_and_recovery() {
    let rig = Rig::start(COOLDOWN).await;
    let (idem, orders) = (&rig.idem, &rig.orders);
    let call = |n: String, mode: Mode| async move {
        let (r, report) = reported(orders.create(idem, &n, mode, Duration::ZERO)).await;
        let out = r.unwrap_or_else(|e| panic!("order {n}: {e:?}"));
        (out, report.expect("a guarded call reports"))
    };

    // Healthy: ten orders, then their repeats.
    for i in 0..10 {
        assert_eq!(
            call(no("k", i), Mode::Backstop).await.0.how(),
            How::Executed
        );
    }
    for i in 0..10 {
        assert_eq!(
            call(no("k", i), Mode::Backstop).await.0.how(),
            How::Replayed
        );
    }
    let before = idem.stats();

    rig.proxy.black_hole();
    // Repeats of finished orders: each claim waits out its budget (the first
    // ones, until the breaker opens), the body runs and the constraint stops it.
    for i in 0..4 {
        let (out, report) = call(no("k", i), Mode::Backstop).await;
        assert_eq!((out.how(), out.is_stored()), (How::Backstop, false));
        assert_eq!(report.outcome(), CallOutcome::Degraded);
        assert!(report.is_backstop_hit() && report.is_replay());
    }
    // A new order whose claim goes into the hole too (the fifth failure: the
    // breaker opens). The claim applies when the hole delivers it; the degraded
    // call settles it in the background with its value, so after the heal the
    // order replays instead of waiting out the orphan claim's lease.
    let (out, report) = call("x0".to_owned(), Mode::Backstop).await;
    assert_eq!(
        (out.how(), report.outcome()),
        (How::Degraded, CallOutcome::Degraded)
    );
    let x0 = *out.value();
    let opened = Instant::now();
    // The breaker is open: new orders run at once under the backstop...
    for i in 0..10 {
        let (out, report) = call(no("n", i), Mode::Backstop).await;
        assert_eq!((out.how(), out.is_stored()), (How::Degraded, false));
        assert_eq!(report.outcome(), CallOutcome::Degraded);
        assert!(!report.is_backstop_hit() && !report.is_replay());
    }
    // ... and their repeats are stopped by the constraint.
    for i in 0..5 {
        let (out, report) = call(no("n", i), Mode::Backstop).await;
        assert_eq!(out.how(), How::Backstop);
        assert!(report.is_backstop_hit());
    }
    assert!(
        opened.elapsed() < COOLDOWN,
        "the open phase outlasted the cooldown ({:?}): a probe went into the hole",
        opened.elapsed()
    );
    let during = idem.stats();

    rig.proxy.heal();
    let healed = Instant::now();
    // Until the breaker closes, fresh orders still degrade. It closes on the
    // first answer from the store: here usually the late answer to x0's settling
    // at the heal, at the latest the probe one cooldown after it opened.
    let mut degraded_after_heal = 0;
    let recovered = loop {
        let (out, report) = call(no("f", degraded_after_heal), Mode::Backstop).await;
        match out.how() {
            How::Degraded => degraded_after_heal += 1,
            How::Executed => break healed.elapsed(),
            other => panic!("{other:?} {report:?}"),
        }
        assert!(healed.elapsed() < COOLDOWN * 3, "never recovered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let since_open = opened.elapsed() - healed.elapsed() + recovered;
    println!(
        "heal -> first non-degraded call: {recovered:?} (breaker opened {since_open:?} before it, \
         cooldown {COOLDOWN:?}); degraded after heal: {degraded_after_heal}"
    );
    // Probed on time at the latest: one cooldown after opening (plus slack).
    assert!(
        since_open < COOLDOWN + Duration::from_secs(1),
        "{since_open:?}"
    );
    assert!(
        recovered < COOLDOWN + Duration::from_secs(1),
        "{recovered:?}"
    );

    // Finished orders replay (the black-holed claims found their records).
    for i in 0..10 {
        assert_eq!(
            call(no("k", i), Mode::Backstop).await.0.how(),
            How::Replayed
        );
    }
    let (out, _) = call("x0".to_owned(), Mode::Backstop).await;
    assert_eq!((out.how(), *out.value()), (How::Replayed, x0));
    // Degraded orders have no record: the store grants the claim, the constraint
    // catches the duplicate (a guarded backstop hit) and `on_conflict`'s value is
    // stored for the repeats.
    for i in 5..10 {
        let (out, report) = call(no("n", i), Mode::Backstop).await;
        assert_eq!((out.how(), out.is_stored()), (How::Backstop, true));
        assert_eq!(report.outcome(), CallOutcome::Backstop);
    }
    assert_eq!(
        call(no("n", 5), Mode::Backstop).await.0.how(),
        How::Replayed
    );
    let after = idem.stats();

    let counts = |s: &idem::Stats| {
        [
            "executed",
            "replayed",
            "degraded",
            "backstop",
            "not_stored",
            "failed",
        ]
        .map(|o| s.count(o))
    };
    println!(
        "counters [executed, replayed, degraded, backstop, not_stored, failed] / degraded hits / \
         backstop hits / calls: before {:?} {} {} {}; during {:?} {} {} {}; after {:?} {} {} {}",
        counts(&before),
        before.degraded_backstop_hits,
        before.backstop_hits(),
        before.calls(),
        counts(&during),
        during.degraded_backstop_hits,
        during.backstop_hits(),
        during.calls(),
        counts(&after),
        after.degraded_backstop_hits,
        after.backstop_hits(),
        after.calls(),
    );
    assert_eq!(counts(&before), [10, 10, 0, 0, 0, 0]);
    assert_eq!((before.backstop_hits(), before.calls()), (0, 20));
    assert_eq!(counts(&during), [10, 10, 20, 0, 0, 0]);
    assert_eq!(during.degraded_backstop_hits, 9);
    assert_eq!((during.backstop_hits(), during.calls()), (9, 40));
    let d = degraded_after_heal as u64;
    // + the probe; + 10 replays, x0's and 1 of a backstopped order.
    assert_eq!(counts(&after), [11, 22, 20 + d, 5, 0, 0]);
    assert_eq!(after.degraded_backstop_hits, 9);
    assert_eq!(after.backstop_hits(), 14);
    assert_eq!(after.calls(), 58 + d);
    assert!(
        (after.interception_rate() - (22.0 + 14.0) / (58 + d) as f64).abs() < 1e-9,
        "interception counts degraded hits"
    );

    // Body runs: one per order, plus one per call the constraint stopped.
    let runs = orders.runs();
    let total: u32 = runs.values().sum();
    assert_eq!(total as u64, 10 + 20 + d + 1 + 5);
    assert_eq!(
        orders.rows().await.0,
        orders.rows().await.1,
        "no duplicate rows"
    );
    assert_eq!(orders.rows().await.0 as u64, 10 + 1 + 10 + d + 1);
}
