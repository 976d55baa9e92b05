//! The returned future is `Send`, so it can be spawned on a multi-threaded runtime.
use idem::Idem;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error("db")]
    Db(#[source] std::io::Error),
}

#[derive(serde::Serialize, serde::Deserialize)]
pub struct Cmd {
    pub amount: u64,
}

#[idem::idempotent(key = "send-pay:<order_no>", fingerprint = [cmd], backstop = "uk_pay", on_conflict = find, handle = idem)]
async fn pay(idem: &Idem, order_no: &str, cmd: &Cmd) -> Result<u64, AppError> {
    tokio::task::yield_now().await;
    Ok(cmd.amount)
}

async fn find(_: &&Idem, _: &&str, cmd: &&Cmd) -> Result<u64, AppError> {
    Ok(cmd.amount)
}

fn assert_send<F: std::future::Future + Send>(f: F) -> F {
    f
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let idem = Arc::new(Idem::builder().store(idem::MemoryStore::new()).build().unwrap());
    let h = rt.spawn(async move { assert_send(pay(&idem, "o-1", &Cmd { amount: 5 })).await.unwrap() });
    assert_eq!(rt.block_on(h).unwrap(), 5);
}
