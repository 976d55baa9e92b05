#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::distributed_lock(key = "lock:deduct:<order_no>", laese = "3s", handle = idem)]
async fn deduct(idem: &Idem, order_no: u64) -> Result<u64, AppError> {
    Ok(order_no)
}
fn main() {}
