#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::idempotent(key = "order-create:<id>", ttl = 86400, lease = 2.5, handle = idem)]
async fn create(idem: &Idem, id: u64) -> Result<u64, AppError> {
    Ok(id)
}
fn main() {}
