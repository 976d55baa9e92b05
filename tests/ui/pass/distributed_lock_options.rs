#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::distributed_lock(key = "lock:deduct:<order_no>", lease = "3s", wait = "500ms", max_hold = "60s", handle = idem)]
async fn deduct(idem: &Idem, order_no: &str, fence: idem::Fence) -> Result<u64, AppError> {
    Ok(fence.get())
}

#[idem::distributed_lock(key = "lock:renamed:<id>", crate = "::idem")]
async fn plain(id: u64) -> Result<(), AppError> {
    Ok(())
}

fn main() {
    let _ = deduct;
    let _ = plain;
}
