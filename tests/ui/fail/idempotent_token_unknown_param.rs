#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::idempotent(key = "order-create:<req_id>", token = "<form_tokn>", handle = idem)]
async fn create(idem: &Idem, req_id: u64, form_token: &str) -> Result<u64, AppError> {
    Ok(req_id)
}
fn main() {}
