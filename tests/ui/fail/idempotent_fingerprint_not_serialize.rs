#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

pub struct Payload {
    pub amount: u64,
}

#[idem::idempotent(key = "order-create:<id>", fingerprint = [payload], handle = idem)]
async fn create(idem: &Idem, id: u64, payload: &Payload) -> Result<u64, AppError> {
    Ok(id + payload.amount)
}

fn main() {}
