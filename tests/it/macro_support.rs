//! Shared pieces of the `macro_*` behaviour tests: a per-test handle on the
//! memory store and a business error type.

use std::sync::atomic::{AtomicUsize, Ordering};

use idem::{Idem, MemoryStore};

/// A fresh handle on its own memory store.
pub(crate) fn handle() -> Idem {
    Idem::builder()
        .store(MemoryStore::new())
        .namespace("it")
        .build()
        .expect("memory handle")
}

/// The business error of the test functions.
#[derive(Debug, thiserror::Error, serde::Serialize, serde::Deserialize, PartialEq)]
pub(crate) enum AppError {
    #[error("idem: {0}")]
    Idem(String),
    #[error("rejected: {0}")]
    Rejected(String),
    #[error("transient: {0}")]
    Transient(String),
}

impl From<idem::Error> for AppError {
    fn from(e: idem::Error) -> Self {
        AppError::Idem(format!("{e:?}"))
    }
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
