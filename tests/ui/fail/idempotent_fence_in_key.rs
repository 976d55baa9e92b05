#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::idempotent(key = "order-create:<fence>", handle = idem)]
async fn create(idem: &Idem, fence: idem::Fence) -> Result<u64, AppError> {
    Ok(fence.get())
}
fn main() {}
