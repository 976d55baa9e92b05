#![allow(unused_variables)]
use axum::response::IntoResponse;
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::idempotent(key = "refund:<id>", handle = idem)]
async fn refund(idem: &Idem, id: u64) -> Result<impl IntoResponse, AppError> {
    Ok(format!("refund {id}"))
}

fn main() {}
