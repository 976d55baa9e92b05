//! A shadowed `Result` alias, a shadowed `Option`, and an error found behind the alias.
#![allow(dead_code)]
use idem::Idem;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
}

type Result<T> = std::result::Result<T, AppError>;
struct Option;
struct Some;
mod core {}

#[idem::idempotent(key = "alias-create:<id>", backstop = "uk_alias", handle = idem)]
async fn create(idem: &Idem, id: u64) -> Result<u64> {
    Ok(id)
}

/// Another alias name entirely.
type Res<T, E = AppError> = std::result::Result<T, E>;

#[idem::idempotent(key = "alias-res:<id>", handle = idem)]
async fn other_alias(idem: &Idem, id: u64) -> Res<u64> {
    Ok(id)
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let idem = Idem::builder().store(idem::MemoryStore::new()).build().unwrap();
    assert_eq!(rt.block_on(create(&idem, 4)).unwrap(), 4);
    assert_eq!(rt.block_on(other_alias(&idem, 5)).unwrap(), 5);
}
