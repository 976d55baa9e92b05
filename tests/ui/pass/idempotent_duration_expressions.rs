//! Durations as expressions: a const, a constructor, a parameter's method, a
//! field of `self`, and a lock's lease from a `LazyLock` read at run time.
//! Each is evaluated per call; the calls run and replay.
use std::sync::LazyLock;
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

const ORDER_TTL: Duration = Duration::from_secs(3_600);
static LOCK_LEASE: LazyLock<Duration> = LazyLock::new(|| Duration::from_secs(3));

pub struct Tuning {
    wait: Duration,
}
impl Tuning {
    fn wait(&self) -> Duration {
        self.wait
    }
}

#[idem::idempotent(key = "expr-create:<id>", ttl = ORDER_TTL, lease = Duration::from_secs(3), wait = tuning.wait(), handle = idem)]
async fn create(idem: &Idem, tuning: &Tuning, id: u64) -> Result<u64, AppError> {
    Ok(id)
}

pub struct Service {
    idem: Idem,
    ttl: Duration,
}
impl Service {
    #[idem::idempotent(key = "expr-method:<id>", ttl = self.ttl, handle = &self.idem)]
    async fn pay(&self, id: u64) -> Result<u64, AppError> {
        Ok(id)
    }
}

#[idem::distributed_lock(key = "lock:expr:<id>", lease = *LOCK_LEASE, wait = Duration::ZERO, handle = idem)]
async fn deduct(idem: &Idem, id: u64) -> Result<u64, AppError> {
    Ok(id)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let idem = Idem::builder().store(idem::MemoryStore::new()).build().unwrap();
    let tuning = Tuning { wait: Duration::from_secs(1) };
    assert_eq!(create(&idem, &tuning, 1).await.unwrap(), 1);
    assert_eq!(create(&idem, &tuning, 1).await.unwrap(), 1);
    let svc = Service { idem: idem.clone(), ttl: Duration::from_secs(60) };
    assert_eq!(svc.pay(2).await.unwrap(), 2);
    assert_eq!(deduct(&idem, 3).await.unwrap(), 3);
    assert_eq!(idem.stats().count("replayed"), 1);
}
