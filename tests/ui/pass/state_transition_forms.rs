//! Both forms compile and the futures are `Send`: the explicit attribute on a
//! connection parameter, and the bare card form inside a `#[transitions]` impl.
#![allow(dead_code)]
use idem::Transition;

#[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
#[state_machine(acyclic, edges(WaitPay -> PaySuccess, PaySuccess -> Shipped))]
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

// A user type alias called `Result` does not change what the expansion means.
type Result<T> = std::result::Result<T, AppError>;

struct Cmd {
    order_no: String,
}

#[idem::state_transition(machine = OrderStatus, from = WaitPay, to = PaySuccess,
    table = "t_order", key = cmd.order_no, key_column = "order_no", tx = conn)]
async fn paid(conn: &mut sqlx::SqliteConnection, cmd: &Cmd) -> Result<Transition<u8>> {
    Ok(1)
}

/// Without a savepoint (one source state: a failing body sets it back).
#[idem::state_transition(machine = OrderStatus, from = WaitPay, to = PaySuccess,
    table = "t_order", key = order_no, key_column = "order_no", tx = tx, savepoint = false)]
async fn paid_bare(tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>, order_no: &str) -> Result<Transition<u8>> {
    Ok(1)
}

struct Orders;

#[idem::transitions(machine = OrderStatus, table = "t_order", key = order_no, key_column = "order_no")]
impl Orders {
    #[state_transition(from = "PAY_SUCCESS", to = "SHIPPED")]
    async fn ship(&self, tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>, order_no: &str)
        -> Result<Transition<()>> {
        Ok(())
    }
}

fn is_send<T: Send>(_: T) {}

/// Never called: compiling it is the check.
fn spawnable(pool: sqlx::SqlitePool) {
    is_send(async move {
        let mut conn = pool.acquire().await.unwrap();
        let cmd = Cmd {
            order_no: "o".into(),
        };
        let _ = paid(&mut conn, &cmd).await;
        let mut tx = pool.begin().await.unwrap();
        let _ = Orders.ship(&mut tx, "o").await;
    });
}

fn main() {
    let _ = spawnable;
}
