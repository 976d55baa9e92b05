//! `#[idempotent]` on the memory store: first call, repeats, failures,
//! fingerprints, terminal errors, versions and the global handle.

use std::sync::Arc;

use idem::{Idem, MemoryStore, Store};

use crate::macros::support::{AppError, Counter, handle, handles, is_rejection};

// lease ≥ 3 × the 1 s default op timeout, so calls keep their whole budget (issue 18)
#[idem::idempotent(key = "basic-create:<user_id>:<req_id>", ttl = "1h", lease = "3s", handle = idem)]
async fn create(
    idem: &Idem,
    runs: &Counter,
    user_id: u64,
    req_id: &str,
) -> Result<String, AppError> {
    let n = runs.hit();
    Ok(format!("order-{user_id}-{req_id}-{n}"))
}

#[tokio::test]
async fn first_call_runs_and_repeats_replay() {
    for (idem, _dir) in handles().await {
        let runs = Counter::default();
        let first = create(&idem, &runs, 7, "r1").await.unwrap();
        assert_eq!(first, "order-7-r1-1");
        for _ in 0..10 {
            assert_eq!(create(&idem, &runs, 7, "r1").await.unwrap(), first);
        }
        assert_eq!(runs.get(), 1);
        assert_eq!(idem.stats().count("executed"), 1);
        assert_eq!(idem.stats().count("replayed"), 10);
        // The macro renders the same key as the non-macro API, under the namespace.
        let key = idem.key("basic-create", &[&7u64, &"r1"]);
        assert_eq!(key.as_str(), "it:basic-create:7:r1");
        assert!(
            idem.inspect(&key).await.unwrap().is_some(),
            "record stored under {key}"
        );
        // A different argument is a different key; escaping keeps `a:b` distinct.
        assert_eq!(create(&idem, &runs, 7, "r2").await.unwrap(), "order-7-r2-2");
        assert_eq!(
            create(&idem, &runs, 7, "r2:x").await.unwrap(),
            "order-7-r2:x-3"
        );
        assert_eq!(runs.get(), 3);
    }
}

// lease ≥ 3 × the 1 s default op timeout, so calls keep their whole budget (issue 18)
#[idem::idempotent(key = "basic-flaky:<id>", lease = "3s", handle = idem)]
async fn flaky(idem: &Idem, runs: &Counter, id: u32) -> Result<u32, AppError> {
    if runs.hit() == 1 {
        return Err(AppError::Transient("db timeout".into()));
    }
    Ok(id * 10)
}

#[tokio::test]
async fn a_failed_body_releases_the_key_and_a_retry_runs() {
    for (idem, _dir) in handles().await {
        let runs = Counter::default();
        assert!(matches!(
            flaky(&idem, &runs, 4).await,
            Err(AppError::Transient(_))
        ));
        assert_eq!(flaky(&idem, &runs, 4).await.unwrap(), 40);
        assert_eq!(flaky(&idem, &runs, 4).await.unwrap(), 40);
        assert_eq!(runs.get(), 2);
        assert_eq!(idem.stats().count("released"), 1);
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Payment {
    amount: u64,
    currency: String,
}

#[idem::idempotent(key = "basic-pay:<order_no>", fingerprint = [payment], handle = idem)]
async fn pay(
    idem: &Idem,
    runs: &Counter,
    order_no: &str,
    payment: &Payment,
) -> Result<u64, AppError> {
    runs.hit();
    Ok(payment.amount)
}

#[tokio::test]
async fn same_key_with_another_payload_is_a_mismatch() {
    for (idem, _dir) in handles().await {
        let runs = Counter::default();
        let eur = Payment {
            amount: 100,
            currency: "EUR".into(),
        };
        let usd = Payment {
            amount: 100,
            currency: "USD".into(),
        };
        assert_eq!(pay(&idem, &runs, "o-1", &eur).await.unwrap(), 100);
        let err = pay(&idem, &runs, "o-1", &usd).await.unwrap_err();
        assert!(
            matches!(err, AppError::Idem(idem::Error::PayloadMismatch { .. })),
            "{err:?}"
        );
        assert_eq!(pay(&idem, &runs, "o-1", &eur.clone()).await.unwrap(), 100);
        assert_eq!(runs.get(), 1);
        assert_eq!(idem.stats().count("mismatch"), 1);
    }
}

#[idem::idempotent(key = "basic-refund:<id>", terminal = is_rejection, handle = idem)]
async fn refund(idem: &Idem, runs: &Counter, id: u32, reject: bool) -> Result<u32, AppError> {
    runs.hit();
    if reject {
        return Err(AppError::Rejected(format!("refund {id} not allowed")));
    }
    Err(AppError::Transient("gateway".into()))
}

#[tokio::test]
async fn terminal_errors_are_stored_and_replayed() {
    for (idem, _dir) in handles().await {
        let runs = Counter::default();
        for _ in 0..3 {
            let err = refund(&idem, &runs, 1, true).await.unwrap_err();
            assert!(
                matches!(&err, AppError::Rejected(m) if m == "refund 1 not allowed"),
                "{err:?}"
            );
        }
        assert_eq!(runs.get(), 1, "a terminal error is replayed, not re-run");
        // A non-terminal error is not stored: every call runs.
        for _ in 0..2 {
            assert!(matches!(
                refund(&idem, &runs, 2, false).await,
                Err(AppError::Transient(_))
            ));
        }
        assert_eq!(runs.get(), 3);
    }
}

#[idem::idempotent(key = "basic-item:<id>", version = 1, handle = idem)]
async fn item_v1(idem: &Idem, id: u32) -> Result<String, AppError> {
    Ok(format!("v1-{id}"))
}

#[idem::idempotent(key = "basic-item:<id>", version = 2, handle = idem)]
async fn item_v2(idem: &Idem, id: u32) -> Result<String, AppError> {
    Ok(format!("v2-{id}"))
}

#[tokio::test]
async fn a_result_stored_by_another_version_is_a_codec_error() {
    // Two deployments (handles) on one store: the old one stored version 1.
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let old = Idem::builder()
        .shared_store(store.clone())
        .namespace("it")
        .build()
        .unwrap();
    let new = Idem::builder()
        .shared_store(store)
        .namespace("it")
        .build()
        .unwrap();
    assert_eq!(item_v1(&old, 5).await.unwrap(), "v1-5");
    let err = item_v2(&new, 5).await.unwrap_err();
    assert!(
        matches!(err, AppError::Idem(idem::Error::Codec { .. })),
        "{err:?}"
    );
    // A fresh key under version 2 is fine.
    assert_eq!(item_v2(&new, 6).await.unwrap(), "v2-6");
}

#[idem::idempotent(key = "basic-global:<id>")]
async fn uses_global(runs: &Counter, id: u32) -> Result<u32, AppError> {
    runs.hit();
    Ok(id)
}

/// No test in this binary may call `idem::install`: this one needs the global unset.
#[tokio::test]
async fn without_a_handle_and_nothing_installed_the_call_fails() {
    let runs = Counter::default();
    let err = uses_global(&runs, 1).await.unwrap_err();
    assert!(
        matches!(err, AppError::Idem(idem::Error::NotInstalled)),
        "{err:?}"
    );
    assert_eq!(runs.get(), 0);
}

#[derive(Debug)]
struct Customer {
    id: u64,
}

#[derive(Debug)]
struct Checkout {
    customer: Customer,
    cart: (String, u32),
}

#[idem::idempotent(key = "basic-checkout:<cmd.customer.id>:<cmd.cart.0>", handle = idem)]
async fn checkout(idem: &Idem, runs: &Counter, cmd: &Checkout) -> Result<u32, AppError> {
    runs.hit();
    Ok(cmd.cart.1)
}

#[tokio::test]
async fn field_paths_in_the_key_select_the_record() {
    for (idem, _dir) in handles().await {
        let runs = Counter::default();
        let cmd = |id, cart: &str, n| Checkout {
            customer: Customer { id },
            cart: (cart.into(), n),
        };
        assert_eq!(checkout(&idem, &runs, &cmd(1, "c1", 3)).await.unwrap(), 3);
        // Same customer and cart, other quantity: the key does not include it, so replay.
        assert_eq!(checkout(&idem, &runs, &cmd(1, "c1", 9)).await.unwrap(), 3);
        assert_eq!(checkout(&idem, &runs, &cmd(2, "c1", 9)).await.unwrap(), 9);
        assert_eq!(runs.get(), 2);
        let key = idem.key("basic-checkout", &[&1u64, &"c1"]);
        assert!(idem.inspect(&key).await.unwrap().is_some());
    }
}

/// `Cell` is `Send` but not `Sync`: the guarded future must still be `Send`
/// (the engine encodes the result before awaiting the store, rather than
/// holding `&T` across the await).
#[idem::idempotent(key = "basic-cell:<id>", handle = idem)]
async fn cell(idem: &Idem, id: u32) -> Result<std::cell::Cell<u32>, AppError> {
    tokio::task::yield_now().await;
    Ok(std::cell::Cell::new(id))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_that_is_send_but_not_sync_keeps_the_future_send() {
    let idem = std::sync::Arc::new(handle());
    let spawned = {
        let idem = idem.clone();
        tokio::spawn(async move { cell(&idem, 3).await.map(|c| c.get()) })
    };
    assert_eq!(spawned.await.unwrap().unwrap(), 3);
    assert_eq!(cell(&idem, 3).await.unwrap().get(), 3);
    assert_eq!(idem.stats().count("replayed"), 1);
}
