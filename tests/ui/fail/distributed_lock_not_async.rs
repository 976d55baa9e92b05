#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::distributed_lock(key = "lock:deduct:<order_no>", handle = idem)]
fn deduct(idem: &Idem, order_no: u64) -> Result<u64, AppError> {
    Ok(order_no)
}

// The caller's `.await` adds no error: the fallback emits `deduct` as `async`.
async fn caller(idem: &Idem) -> Result<u64, AppError> {
    deduct(idem, 7).await
}
fn main() {}
