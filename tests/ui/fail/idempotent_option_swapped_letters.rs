#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::idempotent(kye = "order-create:<user_id>", handle = idem)]
async fn create(idem: &Idem, user_id: u64) -> Result<u64, AppError> {
    Ok(user_id)
}
fn main() {}
