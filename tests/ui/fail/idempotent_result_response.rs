#![allow(unused_variables)]
use axum::response::{IntoResponse, Response};
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::idempotent(key = "refund:<id>", handle = idem)]
async fn refund(idem: &Idem, id: u64) -> Result<Response, AppError> {
    Ok(format!("refund {id}").into_response())
}

fn main() {}
