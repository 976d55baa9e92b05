#![allow(unused_variables, dead_code)]
use idem::Transition;

#[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
#[state_machine(edges(WaitPay -> Refunding, WaitPay -> Cancelled, Refunding -> Cancelled))]
enum OrderStatus {
    WaitPay,
    Refunding,
    Cancelled,
}

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::state_transition(machine = OrderStatus, from = [WaitPay, Refunding], to = Cancelled,
    table = "t_order", key = order_no, key_column = "order_no", tx = tx, savepoint = false)]
async fn cancel(tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>, order_no: &str) -> Result<Transition<()>, AppError> {
    Ok(())
}

#[idem::state_transition(machine = OrderStatus, from = WaitPay, to = Cancelled,
    table = "t_order", key = order_no, key_column = "order_no", tx = tx, savepoint = 0)]
async fn cancel_unpaid(tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>, order_no: &str) -> Result<Transition<()>, AppError> {
    Ok(())
}
fn main() {}
