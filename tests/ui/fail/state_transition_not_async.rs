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

#[idem::state_transition(machine = OrderStatus, from = WaitPay, to = PaySuccess,
    table = "t_order", key = order_no, key_column = "order_no", tx = tx)]
fn paid(tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>, order_no: &str) -> Result<Transition<()>, AppError> {
    Ok(())
}

// The caller's `.await` adds no error: the fallback emits `paid` as `async`.
async fn caller(tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>) -> Result<Transition<()>, AppError> {
    paid(tx, "o-1").await
}
fn main() {}
