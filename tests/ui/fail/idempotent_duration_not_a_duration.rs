#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

const ORDER_TTL_SECS: u64 = 86_400;

// An expression must be a `Duration`: rustc says so at the expression.
#[idem::idempotent(key = "order-create:<id>", ttl = ORDER_TTL_SECS, handle = idem)]
async fn create(idem: &Idem, id: u64) -> Result<u64, AppError> {
    Ok(id)
}

#[idem::distributed_lock(key = "lock:stock:<sku>", lease = format!("{sku}s"), handle = idem)]
async fn deduct(idem: &Idem, sku: u64) -> Result<u64, AppError> {
    Ok(sku)
}
fn main() {}
