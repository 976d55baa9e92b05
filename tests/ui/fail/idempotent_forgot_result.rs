#![allow(unused_variables)]
use idem::Idem;

#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Order {
    id: u64,
}

#[idem::idempotent(key = "order-create:<user_id>", handle = idem)]
async fn create(idem: &Idem, user_id: u64) -> Order {
    Order { id: user_id }
}
fn main() {}
