//! Generic functions: the key part and the result may be type parameters.
use idem::{Idem, KeyPart};
use serde::{Serialize, de::DeserializeOwned};

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

#[idem::idempotent(key = "generic-echo:<id>", handle = idem)]
async fn echo<'a, K, T>(idem: &'a Idem, id: K, value: T) -> Result<T, AppError>
where
    K: KeyPart + Send + Sync,
    T: Serialize + DeserializeOwned + Send + Sync + Clone,
{
    let _ = &id;
    Ok(value.clone())
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let idem = Idem::builder().store(idem::MemoryStore::new()).build().unwrap();
    assert_eq!(rt.block_on(echo(&idem, 1u32, vec![1, 2])).unwrap(), vec![1, 2]);
    assert_eq!(rt.block_on(echo(&idem, 1u32, vec![3])).unwrap(), vec![1, 2]);
    assert_eq!(rt.block_on(echo(&idem, "x", 5u8)).unwrap(), 5);
}
