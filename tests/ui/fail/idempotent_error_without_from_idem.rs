#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[derive(Debug)]
pub struct OtherError;

#[idem::idempotent(key = "order-create:<id>", handle = idem)]
async fn create(idem: &Idem, id: u64) -> Result<u64, OtherError> {
    Ok(id)
}
fn main() {}
