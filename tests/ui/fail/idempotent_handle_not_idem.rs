#![allow(unused_variables)]

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::idempotent(key = "order-create:<id>", handle = name)]
async fn create(name: &str, id: u64) -> Result<u64, AppError> {
    Ok(id)
}
fn main() {}
