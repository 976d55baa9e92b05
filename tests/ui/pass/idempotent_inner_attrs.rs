//! Doc comments, outer and inner attributes survive; `use` in the body does not
//! change what the generated paths mean.
#![deny(unused_variables)]
use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

/// Documented.
#[idem::idempotent(key = "attrs:<id>", handle = idem)]
#[allow(clippy::needless_return)]
#[must_use = "the order"]
pub async fn create(idem: &Idem, id: u64) -> Result<u64, AppError> {
    #![allow(unused_mut)]
    use std::result::Result as Spec;
    let mut x: Spec<u64, ()> = Ok(id);
    if id == 0 {
        return Err(AppError);
    }
    let v = x.map_err(|_| AppError)?;
    return Ok(v);
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let idem = Idem::builder().store(idem::MemoryStore::new()).build().unwrap();
    assert_eq!(rt.block_on(create(&idem, 2)).unwrap(), 2);
    assert!(rt.block_on(create(&idem, 0)).is_err());
}
