#![allow(unused_variables)]
use axum::response::IntoResponse;
use idem::Idem;

#[idem::idempotent(key = "refund:<id>", handle = idem)]
async fn refund(idem: &Idem, id: u64) -> impl IntoResponse {
    format!("refund {id}")
}

fn main() {}
