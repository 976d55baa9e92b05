//! `#[consume_once]` compiles on a transaction and on a connection, with every
//! option, and its future is `Send` (it runs inside broker loops' tasks).
#![allow(dead_code)]
use idem::Consumed;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}
impl From<sqlx::Error> for AppError {
    fn from(_: sqlx::Error) -> Self {
        AppError
    }
}

// A user type alias called `Result` does not change what the expansion means.
type Result<T> = std::result::Result<T, AppError>;

struct RefundMsg {
    id: String,
    order_no: String,
}

#[idem::consume_once(msg_id = "<msg.id>", biz_id = "<msg.order_no>", tx = tx)]
async fn on_refund(tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>, msg: &RefundMsg) -> Result<Consumed<()>> {
    sqlx::query("INSERT INTO refunds (order_no) VALUES (?)")
        .bind(&msg.order_no)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

#[idem::consume_once(msg_id = "<id>", tx = conn, consumer = "billing", msg_type = "paid",
    log = "billing_log", retention = "30d", handle = idem)]
async fn on_paid(conn: &mut sqlx::SqliteConnection, idem: &idem::Idem, id: u64) -> Result<Consumed<u64>> {
    Ok(id)
}

/// Without a savepoint: a failing body deletes the log row, the caller rolls back.
#[idem::consume_once(msg_id = "<id>", tx = tx, savepoint = false)]
async fn on_shipped(tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>, id: u64) -> Result<Consumed<u64>> {
    Ok(id)
}

fn assert_send<T: Send>(_: T) {}

/// Never called: the point is that it compiles.
fn send_check<'a>(tx: &'a mut sqlx::Transaction<'a, sqlx::Sqlite>, m: &'a RefundMsg) {
    assert_send(on_refund(tx, m));
}

fn main() {}
