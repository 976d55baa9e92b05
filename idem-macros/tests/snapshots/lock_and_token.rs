#[idem::distributed_lock(key = "lock:deduct:order:<order_no>", lease = "3s", wait = "500ms", max_hold = "60s")]
pub async fn deduct(db: &PgPool, order_no: &str, fence: idem::Fence) -> Result<(), AppError> {
    write_stock(db, order_no, fence).await
}

#[idem::distributed_lock(key = "lock:report:<day>", handle = &IDEM)]
async fn nightly(day: u32) -> Result<u64, AppError> {
    Ok(1)
}

#[idem::idempotent(key = "order-create:<req_id>", token = "<form.token>")]
async fn submit(req_id: u64, form: &Form) -> Result<u64, AppError> {
    Ok(req_id)
}
