#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

pub struct Cmd {
    pub order_no: String,
}

#[idem::idempotent(key = "order-create:<cmd.order_id>", handle = idem)]
async fn create(idem: &Idem, cmd: &Cmd) -> Result<String, AppError> {
    Ok(cmd.order_no.clone())
}
fn main() {}
