//! `anyhow::Result` with a backstop and every option.
use idem::Idem;

fn is_final(e: &String) -> bool {
    e.starts_with("final")
}

#[idem::idempotent(key = "anyhow-pay:<id>", backstop = "uk_pay", degrade = "backstop", handle = idem)]
async fn pay(idem: &Idem, id: u64) -> anyhow::Result<u64> {
    Ok(id)
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct AppError(String);
impl From<idem::Error> for AppError {
    fn from(e: idem::Error) -> Self {
        AppError(e.to_string())
    }
}
fn is_final_app(e: &AppError) -> bool {
    is_final(&e.0)
}

#[idem::idempotent(
    key = "all-options:<id>", ttl = "7d", lease = "10s", wait = "2s", concurrent = "wait",
    fingerprint = [id, note], version = 3, terminal = is_final_app, handle = idem
)]
async fn all(idem: &Idem, id: u64, note: &str) -> Result<String, AppError> {
    Ok(format!("{id}{note}"))
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let idem = Idem::builder().store(idem::MemoryStore::new()).build().unwrap();
    assert_eq!(rt.block_on(pay(&idem, 4)).unwrap(), 4);
    assert_eq!(rt.block_on(all(&idem, 4, "x")).unwrap(), "4x");
}
