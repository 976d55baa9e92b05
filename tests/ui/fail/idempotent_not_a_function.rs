#[idem::idempotent(key = "order-create:<id>")]
pub struct Order {
    pub id: u64,
}

fn main() {
    // The item is emitted unchanged, so it can still be used.
    let _ = Order { id: 1 };
}
