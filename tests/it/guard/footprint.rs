//! What one guarded call carries: its future is moved by every caller (into a
//! task, a `Box::pin`, an enclosing `async fn`), so its size is paid on every
//! call, duplicates included. Issue 29's memory-store profile found 4 kB
//! copied once per internal layer; the claim path now holds only what a
//! duplicate needs, and the body, its lease watchdog and the finish live in a
//! box that only a first call allocates.

use idem::{Idem, MemoryStore};

/// Every call's future stays small: half of the 4,192 bytes it had when each
/// public `run` was an `async fn` layer holding the whole protocol inline.
const MAX_FUTURE: usize = 2_560;

#[tokio::test]
async fn a_guarded_call_future_stays_small_and_still_runs() -> Result<(), idem::Error> {
    let idem = Idem::builder()
        .store(MemoryStore::new())
        .namespace("footprint")
        .build()?;
    let plain = idem
        .guard("order-create", &[&"u1", &1u64])
        .run(|| async { Ok::<_, idem::Error>(String::from("order-1")) });
    let fenced = idem
        .guard("order-create", &[&"u1", &1u64])
        .run_fenced(|fence| async move { Ok::<_, idem::Error>(format!("order-{}", fence.get())) });
    let sizes = (
        std::mem::size_of_val(&plain),
        std::mem::size_of_val(&fenced),
    );
    assert!(sizes.0 <= MAX_FUTURE && sizes.1 <= MAX_FUTURE, "{sizes:?}");
    // Small and still the whole protocol: the first runs, the second replays it.
    let first = plain.await?;
    assert!(!first.is_replay());
    let again = fenced.await?;
    assert!(again.is_replay());
    assert_eq!(again.into_inner(), "order-1");
    Ok(())
}
