#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::idempotent(key = "refund:<id>", tx = tx, savepoint = "no", handle = idem)]
async fn refund(idem: &Idem, tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>, id: u64) -> Result<u64, AppError> {
    Ok(id)
}

#[idem::idempotent(key = "charge:<id>", savepoint = false, handle = idem)]
async fn charge(idem: &Idem, id: u64) -> Result<u64, AppError> {
    Ok(id)
}
fn main() {}
