//! The caller's transaction as a body run inside it sees it ([`InTx`]), and
//! the boxed future such a body returns ([`TxBody`]): the transactional
//! guard's, insert-once's, a retried transaction's.

use super::{SqlConn, SqlDb};

/// What a body run in the caller's transaction returns (the transactional
/// guard's, insert-once's, a retried transaction's): its future, boxed, borrowing
/// the transaction (`|tx, fence| Box::pin(async move { … })`).
pub type TxBody<'a, T, E> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, E>> + Send + 'a>>;

/// The caller's transaction as the body sees it: derefs to the connection
/// (`query.execute(&mut **tx)`, as with a `&mut sqlx::Transaction`), and
/// [`transaction`](Self::transaction) gives the transaction itself. It is a
/// [`SqlConn`], so a state transition or a consume can run inside the body.
///
/// Why not a plain `&mut sqlx::Transaction`: the body's future borrows it for
/// a lifetime of the guard's choosing, so the body must be a higher-ranked
/// closure; taking this wrapper (which outlives that borrow) lets the body
/// also borrow the caller's other locals, and keeps the call `Send` (an
/// `AsyncFnOnce` bound cannot be proven `Send` by rustc 1.95 inside
/// `tokio::spawn`).
#[derive(Debug)]
pub struct InTx<'g, 't, DB: SqlDb> {
    tx: &'g mut sqlx::Transaction<'t, DB>,
}

impl<'g, 't, DB: SqlDb> InTx<'g, 't, DB> {
    pub(crate) fn new(tx: &'g mut sqlx::Transaction<'t, DB>) -> Self {
        InTx { tx }
    }
}

impl<'t, DB: SqlDb> InTx<'_, 't, DB> {
    /// The caller's transaction.
    pub fn transaction(&mut self) -> &mut sqlx::Transaction<'t, DB> {
        self.tx
    }
}

impl<DB: SqlDb> std::ops::Deref for InTx<'_, '_, DB> {
    type Target = DB::Connection;
    fn deref(&self) -> &DB::Connection {
        self.tx
    }
}

impl<DB: SqlDb> std::ops::DerefMut for InTx<'_, '_, DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        self.tx
    }
}

impl<DB: SqlDb> SqlConn for InTx<'_, '_, DB> {
    type Db = DB;
    fn connection(&mut self) -> &mut DB::Connection {
        self.tx
    }
}
