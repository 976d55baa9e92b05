//! The token store contract's state cycle, on every store that keeps tokens:
//! memory, Redis, Redis Cluster (the suite in `stores.rs`) and, with two
//! store instances over one table, each SQL database (`sql.rs`).

use std::time::Duration;

use idem::store::token::{TokenStore, TokenTake};
use idem::store::{Owned, Owner};

pub fn fence(t: TokenTake) -> u64 {
    match t {
        TokenTake::Taken { fence } => fence.get(),
        other => panic!("expected Taken, got {other:?}"),
    }
}

/// The whole cycle, `a` and `b` on two store instances over the same tokens
/// (two processes for SQL; the same store otherwise).
pub async fn cycle(a: &dyn TokenStore, b: &dyn TokenStore) {
    let (oa, ob) = (Owner::fresh(), Owner::fresh());
    let k = "shop:token:form:0123456789abcdef";
    assert_eq!(a.take(k, oa).await.unwrap(), TokenTake::Invalid);
    a.issue(k, Duration::from_secs(60)).await.unwrap();
    // The take spends it. A retried take by the same owner (its first reply
    // lost) is the same take, with the same fence, whichever instance it reaches.
    let f1 = fence(a.take(k, oa).await.unwrap());
    assert_eq!(fence(a.take(k, oa).await.unwrap()), f1);
    assert_eq!(fence(b.take(k, oa).await.unwrap()), f1);
    // Every other owner finds it spent, also after issuing it again (a no-op).
    assert_eq!(b.take(k, ob).await.unwrap(), TokenTake::Invalid);
    b.issue(k, Duration::from_secs(60)).await.unwrap();
    assert_eq!(b.take(k, ob).await.unwrap(), TokenTake::Invalid);
    // Only the owner gives it back (its body failed).
    assert_eq!(b.give_back(k, ob).await.unwrap(), Owned::NotOwner);
    assert_eq!(a.give_back(k, oa).await.unwrap(), Owned::Applied);
    // Given back: issued, nobody's; a's repeated give-back finds nothing of its own.
    assert_eq!(a.give_back(k, oa).await.unwrap(), Owned::NotOwner);
    let f2 = fence(b.take(k, ob).await.unwrap());
    assert!(f2 > f1, "{f2} > {f1}");
    assert_eq!(a.take(k, oa).await.unwrap(), TokenTake::Invalid);
    assert_eq!(a.give_back(k, oa).await.unwrap(), Owned::NotOwner);
    // b's body succeeded: nothing more is sent. A spent token holds no lease,
    // so a holder that is gone (a crash) never lets it come back.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(a.take(k, oa).await.unwrap(), TokenTake::Invalid);
    assert_eq!(fence(b.take(k, ob).await.unwrap()), f2);

    // The tombstone keeps the token's life: an expired token is invalid,
    // even for the owner that spent it, whose give-back finds nothing left.
    let k3 = "shop:token:form:00000000ffffffff";
    a.issue(k3, Duration::from_secs(1)).await.unwrap();
    fence(a.take(k3, oa).await.unwrap());
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(a.take(k3, oa).await.unwrap(), TokenTake::Invalid);
    assert_eq!(a.give_back(k3, oa).await.unwrap(), Owned::Applied);
    // An expired key is issued anew.
    a.issue(k3, Duration::from_secs(60)).await.unwrap();
    fence(b.take(k3, ob).await.unwrap());
}
