// The form, and every option.
#[idem::consume_once(msg_id = "<msg.id>", biz_id = "<msg.order_no>", tx = tx)]
async fn on_refund(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    msg: &RefundMsg,
) -> Result<idem::Consumed<()>, AppError> {
    insert_refund(tx, &msg.order_no).await?;
    Ok(())
}

#[idem::consume_once(msg_id = "<id>", biz_id = "<cmd.order.no>", tx = conn,
    consumer = "billing", msg_type = "order-paid", log = "billing_log",
    retention = "30d", handle = &IDEM)]
async fn on_paid(conn: &mut sqlx::SqliteConnection, id: &str, cmd: &Paid) -> Result<idem::Consumed<u64>, AppError> {
    Ok(cmd.amount)
}
