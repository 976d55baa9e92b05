//! `#[idempotent]` on the memory store: first call, repeats, failures.

use idem::Idem;

use crate::macro_support::{AppError, Counter, handle};

#[idem::idempotent(key = "basic-create:<user_id>:<req_id>", ttl = "1h", lease = "2s", handle = idem)]
async fn create(idem: &Idem, runs: &Counter, user_id: u64, req_id: &str) -> Result<String, AppError> {
    let n = runs.hit();
    Ok(format!("order-{user_id}-{req_id}-{n}"))
}

#[tokio::test]
async fn first_call_runs_and_repeats_replay() {
    let idem = handle();
    let runs = Counter::default();
    let first = create(&idem, &runs, 7, "r1").await.unwrap();
    assert_eq!(first, "order-7-r1-1");
    for _ in 0..10 {
        assert_eq!(create(&idem, &runs, 7, "r1").await.unwrap(), first);
    }
    assert_eq!(runs.get(), 1);
    assert_eq!(idem.stats().count("executed"), 1);
    assert_eq!(idem.stats().count("replayed"), 10);
    let key = idem.key("basic-create", &[&7u64, &"r1"]);
    assert!(idem.inspect(&key).await.unwrap().is_some(), "record stored under {key}");
    // A different argument is a different key.
    assert_eq!(create(&idem, &runs, 7, "r2").await.unwrap(), "order-7-r2-2");
}
