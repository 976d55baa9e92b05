#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::idempotent(key = "order-create:<id>", backstop = "uk_order", on_conflict = find_order, handle = idem)]
async fn create(idem: &Idem, id: u64, amount: i64) -> Result<u64, AppError> {
    Ok(id)
}

// Takes one parameter too few: `on_conflict` receives every parameter.
async fn find_order(_: &Idem, id: &u64) -> Result<u64, AppError> {
    Ok(*id)
}
fn main() {}
