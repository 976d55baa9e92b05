#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

pub struct Json<T>(pub T);
pub struct CreateOrder {
    pub order_no: String,
}

#[idem::idempotent(key = "order-create:<reqs.order_no>", handle = idem)]
async fn create(idem: &Idem, Json(req): Json<CreateOrder>) -> Result<String, AppError> {
    Ok(req.order_no)
}

fn main() {}
