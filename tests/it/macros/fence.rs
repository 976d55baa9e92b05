//! The `idem::Fence` parameter of an `#[idempotent]` function.

use idem::{Fence, Idem};

use crate::macros::support::{AppError, Counter, handles};

// lease ≥ 3 × the 1 s default op timeout, so calls keep their whole budget (issue 18)
#[idem::idempotent(key = "fence-write:<id>", lease = "3s", handle = idem)]
async fn write(
    idem: &Idem,
    runs: &Counter,
    id: u32,
    fence: Fence,
    fail: bool,
) -> Result<u64, AppError> {
    runs.hit();
    if fail {
        return Err(AppError::Transient(format!("fence {fence}")));
    }
    Ok(fence.get())
}

#[tokio::test]
async fn the_body_sees_a_valid_fence_that_increases_per_claim() {
    for (idem, _dir) in handles().await {
        let runs = Counter::default();
        let failed = write(&idem, &runs, 1, Fence::NONE, true).await.unwrap_err();
        let AppError::Transient(msg) = failed else {
            panic!("{failed:?}")
        };
        let first: u64 = msg.trim_start_matches("fence ").parse().unwrap();
        assert!(Fence::new(first).is_valid());
        let second = write(&idem, &runs, 1, Fence::NONE, false).await.unwrap();
        assert!(second > first, "retry fence {second} after {first}");
        // Replays return the stored value (the fence of the claim that produced it).
        assert_eq!(
            write(&idem, &runs, 1, Fence::NONE, false).await.unwrap(),
            second
        );
        // After the record is forgotten, the next claim's fence is larger still.
        let key = idem.key("fence-write", &[&1u32]);
        assert!(idem.forget(&key).await.unwrap());
        let third = write(&idem, &runs, 1, Fence::NONE, false).await.unwrap();
        assert!(third > second, "fence {third} after forget, was {second}");
        assert_eq!(runs.get(), 3);
    }
}
