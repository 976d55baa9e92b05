//! `crate = "..."` names the runtime under another path.
extern crate idem as renamed;

mod inner {
    #[derive(Debug)]
    pub struct AppError;
    impl From<renamed::Error> for AppError {
        fn from(_: renamed::Error) -> Self {
            AppError
        }
    }

    #[renamed::idempotent(key = "renamed:<id>", backstop = "uk_renamed", handle = h, crate = "renamed")]
    pub async fn create(h: &renamed::Idem, id: u64) -> Result<u64, AppError> {
        Ok(id)
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let h = renamed::Idem::builder().store(renamed::MemoryStore::new()).build().unwrap();
    assert_eq!(rt.block_on(inner::create(&h, 3)).unwrap(), 3);
}
