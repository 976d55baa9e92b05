#![allow(unused_variables)]
use idem::Idem;
use std::rc::Rc;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::idempotent(key = "order-create:<id>", handle = idem)]
async fn create(idem: &Idem, id: u64) -> Result<u64, AppError> {
    let local = Rc::new(id);
    tokio::task::yield_now().await;
    Ok(*local)
}

fn main() {}
