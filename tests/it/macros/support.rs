//! Shared pieces of the `macro_*` behaviour tests: a per-test handle on the
//! memory store and on SQLite; the error and counter types are `support`'s.

use idem::Idem;
use idem::store::sql::SqlStore;

pub(crate) use crate::support::tempdir::TempDir;
pub(crate) use crate::support::{AppError, Counter};

/// A fresh handle on its own memory store, under the fixed namespace `it`
/// (the macro tests assert the rendered keys) and the default op timeout.
pub(crate) fn handle() -> Idem {
    Idem::builder()
        .shared_store(crate::support::stores::memory())
        .namespace("it")
        .build()
        .expect("memory handle")
}

/// A fresh handle per record store the macro tests run on: the in-process store
/// and a SQLite record store in its own temp file (removed with the guard).
pub(crate) async fn handles() -> Vec<(Idem, Option<TempDir>)> {
    let dir = TempDir::new();
    let store = SqlStore::open(dir.path().join("idem.db"))
        .await
        .expect("open sqlite store");
    store.migrate().await.expect("migrate sqlite store");
    let sqlite = Idem::builder()
        .store(store)
        .namespace("it")
        .build()
        .expect("sqlite handle");
    vec![(handle(), None), (sqlite, Some(dir))]
}

/// Is this a business rejection (a final answer, stored and replayed)?
pub(crate) fn is_rejection(e: &AppError) -> bool {
    matches!(e, AppError::Rejected(_))
}
