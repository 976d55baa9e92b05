//! Shared pieces of the `macro_*` behaviour tests: a per-test handle on the
//! memory store and a business error type.

use std::sync::atomic::{AtomicUsize, Ordering};

use idem::store::sql::SqlStore;
use idem::{Idem, MemoryStore};

pub(crate) use crate::support::tempdir::TempDir;

/// A fresh handle on its own memory store.
pub(crate) fn handle() -> Idem {
    Idem::builder()
        .store(MemoryStore::new())
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

/// The business error of the test functions. Serializable so terminal errors
/// can be stored; the `idem::Error` variant is never stored.
#[derive(Debug, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub(crate) enum AppError {
    #[error(transparent)]
    #[serde(skip)]
    Idem(#[from] idem::Error),
    #[error("rejected: {0}")]
    Rejected(String),
    #[error("transient: {0}")]
    Transient(String),
}

/// Is this a business rejection (a final answer, stored and replayed)?
pub(crate) fn is_rejection(e: &AppError) -> bool {
    matches!(e, AppError::Rejected(_))
}

/// Counts body executions.
#[derive(Debug, Default)]
pub(crate) struct Counter(AtomicUsize);

impl Counter {
    pub(crate) fn hit(&self) -> usize {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}
