#![allow(unused_variables, dead_code)]
use idem::Transition;

#[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
#[state_machine(edges(WaitPay -> PaySuccess, PaySuccess -> Shipped))]
enum OrderStatus {
    WaitPay,
    PaySuccess,
    Shipped,
}

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::state_transition(machine = OrderStatus, from = "WAIT_PAY", to = "PAY_SUCESS",
    table = "t_order", key = order_no, key_column = "order_no", tx = tx)]
async fn paid(tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>, order_no: &str) -> Result<Transition<()>, AppError> {
    Ok(())
}
fn main() {}
