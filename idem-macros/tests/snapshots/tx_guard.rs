#[idem::idempotent(key = "refund:<order_no>:<refund_id>", tx = tx, ttl = "7d", fingerprint = [amount])]
pub async fn refund(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    order_no: &str,
    refund_id: &str,
    amount: i64,
    fence: idem::Fence,
) -> Result<i64, AppError> {
    sqlx::query("UPDATE t_pay SET refunded = refunded + $1 WHERE order_no = $2")
        .bind(amount)
        .bind(order_no)
        .execute(&mut **tx)
        .await?;
    Ok(amount)
}
