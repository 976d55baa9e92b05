#[idem::idempotent(key = "order-create:<user_id>:<req_id>", ttl = "24h", backstop = "uk_order_no", on_conflict = find_order)]
pub async fn create_order(db: &PgPool, user_id: u64, req_id: &str, req: CreateOrder) -> Result<Order, AppError> {
    let order = insert_order(db, user_id, req_id, &req).await?;
    Ok(order)
}
