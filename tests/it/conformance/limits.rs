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
    let owner = Owner::random();
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
