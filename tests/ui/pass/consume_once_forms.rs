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

fn assert_send<T: Send>(_: T) {}

fn main() {
    let pool = sqlx::SqlitePool::connect_lazy("sqlite::memory:").unwrap();
    assert_send(async move {
        let mut tx = pool.begin().await.unwrap();
        let m = RefundMsg { id: "m".into(), order_no: "o".into() };
        let _ = on_refund(&mut tx, &m).await;
    });
}
