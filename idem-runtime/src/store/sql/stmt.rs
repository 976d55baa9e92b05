//! [`Stmt`]: one statement's text, shared by every call that sends it.

use std::sync::Arc;

use sqlx::AssertSqlSafe;

/// A statement text shared by every call (cloning is a reference-count bump).
#[derive(Debug, Clone)]
pub(crate) struct Stmt(Arc<str>);

impl From<String> for Stmt {
    fn from(s: String) -> Self {
        Stmt(s.into())
    }
}

impl Stmt {
    pub(crate) fn new(s: String) -> Self {
        Stmt(s.into())
    }
    pub(crate) fn text(&self) -> Arc<str> {
        Arc::clone(&self.0)
    }
    pub(crate) fn q(&self) -> AssertSqlSafe<Arc<str>> {
        AssertSqlSafe(Arc::clone(&self.0))
    }
}
