#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::idempotent(key = "order-create:<user_id>", handle = idem)]
fn create(idem: &Idem, user_id: u64) -> Result<u64, AppError> {
    Ok(user_id)
}

// The caller's `.await` adds no error: the fallback emits `create` as `async`.
async fn caller(idem: &Idem) -> Result<u64, AppError> {
    create(idem, 7).await
}
fn main() {}
