//! Conformance cases about the limits of what a store accepts, run on every store
//! by `conformance_suite!` (re-exported from `conformance`).

use std::sync::Arc;
use std::time::Duration;

use idem::Store;
use idem::store::{Claim, ClaimRequest, Owned, Owner, RecordState};

use crate::support::unique_ns;

/// Issue 10 §A6: a store called directly with `Duration::MAX` as lease and ttl
/// neither panics nor fails (Redis refuses such an expiry, PostgreSQL overflows
/// the interval, `Instant` panics): the record is kept for the longest duration
/// idem supports, 3,650 days.
pub async fn huge_durations_are_capped(store: Arc<dyn Store>) {
    let key = format!("{}:huge:1", unique_ns("lim"));
    let owner = Owner::fresh();
    let req = ClaimRequest {
        key: &key,
        owner,
        fingerprint: idem::fingerprint::Fingerprint::NONE,
        lease: Duration::MAX,
    };
    assert!(matches!(
        store.claim(req).await.expect("claim with a huge lease"),
        Claim::Claimed { .. }
    ));
    assert_eq!(
        store
            .renew(&key, owner, Duration::MAX)
            .await
            .expect("renew"),
        Owned::Applied
    );
    assert_eq!(
        store
            .complete(&key, owner, b"{\"v\":1}", Duration::MAX)
            .await
            .expect("complete with a huge ttl"),
        Owned::Applied
    );
    match store.inspect(&key).await.expect("inspect") {
        Some(RecordState::Done { remaining, .. }) => assert!(
            remaining > Duration::from_secs(365 * 86_400),
            "kept for years, not dropped: {remaining:?}"
        ),
        other => panic!("expected a stored record, got {other:?}"),
    }
    assert!(store.forget(&key).await.expect("forget"));
}

fn claim_req(key: &str, owner: Owner, lease: Duration) -> ClaimRequest<'_> {
    ClaimRequest {
        key,
        owner,
        fingerprint: idem::fingerprint::Fingerprint::NONE,
        lease,
    }
}

/// Issue 28: `census` counts a namespace's records by scene and state (what
/// `idem stats` prints), and leaves out other namespaces, even one that
/// starts with this one's text.
pub async fn census_counts_by_scene_and_state(store: Arc<dyn Store>) {
    let ns = unique_ns("census");
    let lease = Duration::from_secs(30);
    for (scene, i, finish) in [("pay", 1, true), ("pay", 2, true), ("ship", 1, false)] {
        let key = idem::Key::from_parts(&ns, scene, &[&i as &(dyn idem::KeyPart + Sync)]);
        let o = Owner::fresh();
        let claim = store.claim(claim_req(key.as_str(), o, lease)).await;
        assert!(matches!(claim, Ok(Claim::Claimed { .. })), "{claim:?}");
        if finish {
            let done = store.complete(key.as_str(), o, b"I1", lease).await;
            assert_eq!(done.expect("complete"), Owned::Applied);
        }
    }
    let other = format!("{ns}x:pay:1");
    let claim = store.claim(claim_req(&other, Owner::fresh(), lease)).await;
    assert!(matches!(claim, Ok(Claim::Claimed { .. })));
    let census = store.census(&ns).await.expect("census");
    let got: Vec<(&str, u64, u64)> = census
        .scenes
        .iter()
        .map(|s| (s.scene.as_str(), s.in_progress, s.done))
        .collect();
    assert_eq!(got, [("pay", 0, 2), ("ship", 1, 0)]);
    assert_eq!(census.totals(), (1, 2, 0));
    // `list` (what `idem ls` shows): the same keys, by state and scene, sorted.
    let list = |in_progress_only, scene| {
        let filter = idem::store::ListFilter {
            scene,
            in_progress_only,
            limit: 0,
        };
        let (store, ns) = (store.clone(), ns.clone());
        async move {
            let keys = store.list(&ns, filter).await.expect("list");
            keys.into_iter().map(|(k, _)| k).collect::<Vec<_>>()
        }
    };
    let key = |scene: &str, i: u32| format!("{ns}:{scene}:{i}");
    assert_eq!(list(true, None).await, [key("ship", 1)]);
    assert_eq!(
        list(false, None).await,
        [key("pay", 1), key("pay", 2), key("ship", 1)]
    );
    assert_eq!(
        list(false, Some("pay")).await,
        [key("pay", 1), key("pay", 2)]
    );
    // `forget_if` deletes the record it was shown, and only that one.
    let ship = key("ship", 1);
    let seen = store
        .inspect(&ship)
        .await
        .expect("inspect")
        .expect("claimed");
    let other_view = store
        .inspect(&other)
        .await
        .expect("inspect")
        .expect("claimed");
    assert!(
        !store
            .forget_if(&ship, &other_view)
            .await
            .expect("forget_if")
    );
    assert!(store.forget_if(&ship, &seen).await.expect("forget_if"));
    assert!(
        !store.forget_if(&ship, &seen).await.expect("forget_if"),
        "gone"
    );
    assert!(store.forget(&other).await.expect("forget"));
}

/// Issue 28: a dry run counts what a purge would delete and deletes nothing;
/// the purge then deletes it. Redis and memory drop expired records
/// themselves, so there the counts may be 0; the census agrees either way.
pub async fn purge_report_counts_then_deletes(store: Arc<dyn Store>) {
    let ns = unique_ns("purge");
    let key = format!("{ns}:old:1");
    let claim = store
        .claim(claim_req(&key, Owner::fresh(), Duration::from_secs(1)))
        .await;
    assert!(matches!(claim, Ok(Claim::Claimed { .. })));
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    let expired = |c: &idem::store::Census| c.totals().2;
    let before = expired(&store.census(&ns).await.expect("census"));
    assert!(before <= 1);
    let dry = store.purge_report(true).await.expect("dry run");
    assert!(dry.records() >= before, "{dry:?} counts the expired row");
    let after_dry = expired(&store.census(&ns).await.expect("census"));
    assert_eq!(after_dry, before, "a dry run deletes nothing");
    let done = store.purge_report(false).await.expect("purge");
    assert!(done.records() >= before, "{done:?}");
    assert_eq!(expired(&store.census(&ns).await.expect("census")), 0);
    assert_eq!(store.inspect(&key).await.expect("inspect"), None);
}
