#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::idempotent(key = "order create:<usr_id>", ttl = "0s", lease = "5x", tll = "1h", concurrent = "maybe", handle = idem)]
fn create(idem: &Idem, user_id: u64) -> Result<u64, AppError> {
    Ok(user_id)
}

fn main() {
    // The function is emitted unchanged beside the errors, so this call does not
    // add an error of its own.
    let _ = create;
}
