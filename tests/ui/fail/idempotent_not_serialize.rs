#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

pub struct Order {
    pub id: u64,
}

#[idem::idempotent(key = "order-create:<id>", handle = idem)]
async fn create(idem: &Idem, id: u64) -> Result<Order, AppError> {
    Ok(Order { id })
}
fn main() {}
