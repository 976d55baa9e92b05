#![allow(unused_variables)]
use idem::Consumed;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

struct Msg {
    id: String,
    order_no: String,
}

#[idem::consume_once(msg_id = "<msg.id>")]
fn f(tx: &mut sqlx::SqliteConnection, msg: &Msg) -> Result<Consumed<()>, AppError> {
    Ok(())
}

// The caller's `.await` adds no error: the fallback emits `f` as `async`.
async fn caller(tx: &mut sqlx::SqliteConnection, msg: &Msg) -> Result<Consumed<()>, AppError> {
    f(tx, msg).await
}
fn main() {}
