//! `Store::complete_taken`: a holder that describes its claim (the fence it
//! answered, the fingerprint it was sent with) gets `complete`'s contract,
//! whether the description is right or wrong. A store may take a shortcut
//! when it is right (Redis writes the value the client built); a wrong one
//! must cost only the shortcut, never the record's truth or another owner's
//! claim.

use std::sync::Arc;
use std::time::Duration;

use idem::fingerprint::Fingerprint;
use idem::store::{Claim, ClaimRequest, Owned, Owner, RecordState, Taken};
use idem::{Fence, Store};

use super::suite::short;

const TTL: Duration = Duration::from_secs(60);

fn req(key: &str, owner: Owner, fingerprint: Fingerprint) -> ClaimRequest<'_> {
    ClaimRequest {
        key,
        owner,
        fingerprint,
        lease: Duration::from_secs(30),
    }
}

async fn claimed(store: &dyn Store, r: ClaimRequest<'_>, fenced: bool) -> Fence {
    let answer = match fenced {
        true => store.claim(r).await,
        false => store.claim_unfenced(r).await,
    };
    match answer.unwrap() {
        Claim::Claimed { fence } => fence,
        other => panic!("a fresh key must be claimed: {other:?}"),
    }
}

/// The finished record must say what the store's claim said, whatever the
/// holder described.
async fn assert_done(store: &dyn Store, key: &str, owner: Owner, fence: Fence, fp: Fingerprint) {
    match store.inspect(key).await.unwrap() {
        Some(RecordState::Done { record, .. }) => {
            assert_eq!(
                (record.owner, record.fence, record.fingerprint),
                (owner, fence, fp),
                "{key}: the record keeps the claim's owner, fence and fingerprint"
            );
            assert_eq!(record.payload, format!("I1{key}").into_bytes());
        }
        other => panic!("{key} must be finished: {other:?}"),
    }
}

pub async fn complete_taken_holds_for_any_description(store: Arc<dyn Store>) {
    let idem = short(store.clone(), "ct");
    let fp = Fingerprint([7; 16]);
    let keys: Vec<String> = ["right", "unfenced", "wrong", "other", "absent"]
        .iter()
        .map(|k| idem.key("taken", &[k]).as_str().to_owned())
        .collect();
    let payload = |k: &str| format!("I1{k}").into_bytes();
    let a = Owner::fresh();

    // Right: the fence the claim answered, the fingerprint it was sent with.
    for (key, fenced) in [(&keys[0], true), (&keys[1], false)] {
        let fence = claimed(&*store, req(key, a, fp), fenced).await;
        let taken = Taken {
            fence,
            fingerprint: fp,
        };
        for attempt in ["first", "retried after a lost reply"] {
            assert_eq!(
                store
                    .complete_taken(key, a, taken, &payload(key), TTL)
                    .await
                    .unwrap(),
                Owned::Applied,
                "{key}: {attempt}"
            );
        }
        assert_done(&*store, key, a, fence, fp).await;
    }

    // Wrong: another fence and fingerprint. Still completes, and the record
    // keeps what the claim said.
    let key = &keys[2];
    let fence = claimed(&*store, req(key, a, fp), true).await;
    let wrong = Taken {
        fence: Fence::new(fence.get() ^ 0xff),
        fingerprint: Fingerprint([9; 16]),
    };
    let p = payload(key);
    let done = store.complete_taken(key, a, wrong, &p, TTL);
    assert_eq!(done.await.unwrap(), Owned::Applied);
    assert_done(&*store, key, a, fence, fp).await;

    // Another owner's exact description does not make it the owner.
    let key = &keys[3];
    let fence = claimed(&*store, req(key, a, fp), true).await;
    let theirs = Taken {
        fence,
        fingerprint: fp,
    };
    let b = Owner::fresh();
    let p = payload(key);
    let done = store.complete_taken(key, b, theirs, &p, TTL);
    assert_eq!(done.await.unwrap(), Owned::NotOwner);
    match store.inspect(key).await.unwrap() {
        Some(RecordState::InProgress {
            owner, fence: f, ..
        }) => assert_eq!((owner, f), (a, fence)),
        other => panic!("a's claim must be intact: {other:?}"),
    }

    // No claim at all: nothing to complete.
    let key = &keys[4];
    let none = Taken {
        fence: Fence::NONE,
        fingerprint: Fingerprint::NONE,
    };
    let p = payload(key);
    let done = store.complete_taken(key, a, none, &p, TTL);
    assert_eq!(done.await.unwrap(), Owned::NotOwner);
    assert_eq!(store.inspect(key).await.unwrap(), None);

    for key in &keys {
        store.forget(key).await.unwrap();
    }
}
