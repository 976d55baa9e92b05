//! A user module named `idem` does not capture the generated `::idem::...` paths.
mod idem {
    pub mod __private {
        pub struct Spec;
        pub struct KeyBuf;
    }
    pub struct Idem;
}

#[derive(Debug)]
pub struct AppError;
impl From<::idem::Error> for AppError {
    fn from(_: ::idem::Error) -> Self {
        AppError
    }
}

#[::idem::idempotent(key = "user-mod:<id>", handle = handle)]
async fn create(handle: &::idem::Idem, id: u64) -> Result<u64, AppError> {
    let _ = idem::Idem;
    Ok(id)
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let h = ::idem::Idem::builder().store(::idem::MemoryStore::new()).build().unwrap();
    assert_eq!(rt.block_on(create(&h, 9)).unwrap(), 9);
}
