//! An `idem::Fence` parameter receives the claim's fence; callers pass `Fence::NONE`.
use idem::{Fence, Idem};

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::idempotent(key = "fenced:<id>", handle = idem)]
async fn write(idem: &Idem, id: u64, fence: Fence) -> Result<u64, AppError> {
    assert!(fence.is_valid());
    Ok(id + fence.get() * 0)
}

#[idem::idempotent(key = "fenced-mut:<id>", handle = idem)]
async fn write_mut(idem: &Idem, id: u64, mut f: idem::Fence) -> Result<bool, AppError> {
    f = Fence::new(f.get() + id);
    Ok(f.is_valid())
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let idem = Idem::builder().store(idem::MemoryStore::new()).build().unwrap();
    assert_eq!(rt.block_on(write(&idem, 1, Fence::NONE)).unwrap(), 1);
    assert!(rt.block_on(write_mut(&idem, 1, Fence::NONE)).unwrap());
}
