#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::idempotent(key = "order-create:<id>", backstop = "uk_order", on_conflict = find, handle = idem)]
async fn create(idem: &Idem, id: u64, (a, b): (u8, u8)) -> Result<u64, AppError> {
    Ok(id + u64::from(a + b))
}

async fn find(_: &Idem, id: &u64) -> Result<u64, AppError> {
    Ok(*id)
}

fn main() {}
