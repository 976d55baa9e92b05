#![allow(unused_variables)]
use idem::Idem;

#[idem::distributed_lock(key = "lock:deduct:<order_no>", handle = idem)]
async fn deduct(idem: &Idem, order_no: u64) -> u64 {
    order_no
}
fn main() {}
