//! `max_hold` reaches the runtime: a hung body stops renewing its claim after
//! `max_hold`, so a later call takes over and runs; without the option the
//! default (20 × lease) keeps renewing and a later call is rejected. Virtual
//! time (`start_paused`), so the bounds are exact.
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use idem::Idem;

#[derive(Debug)]
pub enum AppError {
    Idem(idem::Error),
}
impl From<idem::Error> for AppError {
    fn from(e: idem::Error) -> Self {
        AppError::Idem(e)
    }
}

static BOUNDED: AtomicU32 = AtomicU32::new(0);
static DEFAULT: AtomicU32 = AtomicU32::new(0);

#[idem::idempotent(key = "bounded:<id>", lease = "1s", max_hold = "1s", concurrent = "reject", handle = idem)]
async fn bounded(idem: &Idem, id: u64, hang: Duration) -> Result<u32, AppError> {
    let run = BOUNDED.fetch_add(1, Ordering::SeqCst) + 1;
    tokio::time::sleep(hang).await;
    Ok(run)
}

#[idem::idempotent(key = "unbounded:<id>", lease = "1s", concurrent = "reject", handle = idem)]
async fn unbounded(idem: &Idem, id: u64, hang: Duration) -> Result<u32, AppError> {
    let run = DEFAULT.fetch_add(1, Ordering::SeqCst) + 1;
    tokio::time::sleep(hang).await;
    Ok(run)
}

const HUNG: Duration = Duration::from_secs(3600);

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    // Store operations well inside a third of the lease, so renewal can keep up.
    let idem = Idem::builder()
        .store(idem::MemoryStore::new())
        .op_timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    rt.block_on(async {
        // The hung call renews nothing (max_hold = lease): its claim lapses at
        // 1 s, and a call at 3 s claims the key and runs.
        let later = tokio::select! {
            _ = bounded(&idem, 1, HUNG) => panic!("the hung body finished"),
            r = async {
                tokio::time::sleep(Duration::from_secs(3)).await;
                bounded(&idem, 1, Duration::ZERO).await
            } => r,
        };
        assert_eq!(later.unwrap(), 2, "the later call ran the body");
        assert_eq!(BOUNDED.load(Ordering::SeqCst), 2);

        // Same timing without `max_hold`: the hung call keeps its claim.
        let later = tokio::select! {
            _ = unbounded(&idem, 1, HUNG) => panic!("the hung body finished"),
            r = async {
                tokio::time::sleep(Duration::from_secs(3)).await;
                unbounded(&idem, 1, Duration::ZERO).await
            } => r,
        };
        assert!(
            matches!(later, Err(AppError::Idem(idem::Error::InProgress { .. }))),
            "{later:?}"
        );
        assert_eq!(DEFAULT.load(Ordering::SeqCst), 1);
    });
}
