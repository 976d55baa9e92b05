#[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
#[state_machine(edges(WaitPay -> PaySuccess, PaySuccess -> Shipped, PaySuccess -> Refunding))]
enum OrderStatus {
    WaitPay,
    PaySuccess,
    Shipped,
    #[state_machine(value = "REFUND_PENDING")]
    Refunding,
}

#[idem::state_transition(machine = OrderStatus, from = WaitPay, to = PaySuccess,
    table = "t_order", key = order_no, key_column = "order_no", tx = tx,
    version_column = "version")]
async fn on_paid(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, order_no: &str, pay_no: &str)
    -> Result<idem::Transition<()>, AppError>
{
    sqlx::query("INSERT INTO t_ledger (pay_no, order_no) VALUES ($1, $2)")
        .bind(pay_no)
        .bind(order_no)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

#[idem::transitions(machine = OrderStatus, table = "t_order", key = order_no,
    key_column = "order_no", tx = tx)]
impl Orders {
    #[state_transition(from = "WAIT_PAY", to = "PAY_SUCCESS")]
    async fn paid(&self, tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, order_no: &str)
        -> Result<idem::Transition<()>, AppError>
    {
        Ok(())
    }
}
