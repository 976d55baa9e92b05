#[idem::idempotent(key = "order-create:<user_id>:<req_id>", ttl = ORDER_TTL, lease = "10s", wait = cfg.duplicate_wait())]
pub async fn create_order(cfg: &Config, user_id: u64, req_id: &str) -> Result<Order, AppError> {
    insert_order(user_id, req_id).await
}

#[idem::distributed_lock(key = "lock:stock:<sku>", lease = Duration::from_secs(3), max_hold = STOCK_MAX_HOLD)]
async fn deduct(sku: &str) -> Result<(), AppError> {
    write_stock(sku).await
}
