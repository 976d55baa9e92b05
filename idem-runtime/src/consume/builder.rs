//! The non-macro API: the same log row and outcomes as `#[idem::consume_once]`,
//! for consumers, ids and tables chosen at run time.

use super::message::{LogTable, Message};
use super::outcome::Consumed;
use super::run::{Step, begin, keys, observed};
use crate::db::SqlConn;
use crate::error::Error;
use crate::handle::Idem;

/// Starts consuming `message` in `conn` (the caller's `sqlx::Transaction`).
///
/// ```text
/// let msg = idem::consume::Message { consumer: "refund", id: &delivery_id,
///                                    business: Some(("refund", &order_no)) };
/// let out = idem::consume::consume_once(&mut tx, msg)
///     .run(async |tx| { insert_refund(tx, &order_no).await })
///     .await?;
/// tx.commit().await?;   // then acknowledge, duplicate or not
/// ```
///
/// Limitation: the body is an async closure taking the connection back, and
/// rustc (1.95) cannot prove such a future `Send` ("implementation of
/// `AsyncFnOnce` is not general enough"), so await it where `Send` is not
/// required, or use the attribute, whose expansion boxes the body as `Send`.
pub fn consume_once<'a, C>(conn: &'a mut C, message: Message<'a>) -> ConsumeCall<'a, C>
where
    C: SqlConn + ?Sized,
{
    ConsumeCall {
        conn,
        message,
        log: LogTable::default(),
        handle: None,
        savepoint: true,
    }
}

/// A consume being set up; see [`consume_once`].
#[must_use = "a consume does nothing until `.run(..)` is awaited"]
pub struct ConsumeCall<'a, C: ?Sized> {
    conn: &'a mut C,
    message: Message<'a>,
    log: LogTable<'a>,
    handle: Option<&'a Idem>,
    savepoint: bool,
}

impl<C: ?Sized> std::fmt::Debug for ConsumeCall<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumeCall")
            .field("message", &self.message)
            .field("log", &self.log)
            .finish_non_exhaustive()
    }
}

impl<'a, C> ConsumeCall<'a, C>
where
    C: SqlConn + ?Sized,
{
    /// Another log table or retention (default `idem_consume_log`, 7 days).
    pub fn log(mut self, log: LogTable<'a>) -> Self {
        self.log = log;
        self
    }

    /// Counts the call in this handle's stats and renders keys under its
    /// namespace (default: the installed global's).
    pub fn handle(mut self, idem: &'a Idem) -> Self {
        self.handle = Some(idem);
        self
    }

    /// Whether the log row and the body run in a savepoint of the transaction
    /// (the default: `true`). With one, a failing body rolls back to it: the
    /// log row and the body's rows go, and the transaction stays usable.
    /// `savepoint(false)` saves that statement: a failing body deletes the
    /// log row by a compensating statement and returns the body's error, and
    /// **the caller must roll the transaction back** to drop the body's rows
    /// (on PostgreSQL a failed statement leaves it aborted anyway). A
    /// duplicate is still answered without disturbing the transaction.
    pub fn savepoint(mut self, savepoint: bool) -> Self {
        self.savepoint = savepoint;
        self
    }

    /// Writes the log row and runs `body` in the same transaction (see
    /// [`Consumed`]). A body error rolls both back to a savepoint (or
    /// compensates, see [`savepoint`](Self::savepoint)) and is returned as is.
    pub async fn run<T, E, F>(self, body: F) -> Result<Consumed<T>, E>
    where
        E: From<Error>,
        F: AsyncFnOnce(&mut C) -> Result<T, E>,
    {
        let keys = keys(self.handle, &self.message);
        let (conn, log) = (self.conn, self.log);
        observed(self.handle, &keys.msg, async {
            match begin(&log, &mut *conn, &keys, self.savepoint).await {
                Step::Go(entry) => {
                    let out = body(&mut *conn).await;
                    entry.finish(conn, out).await
                }
                Step::Done(ended) => ended,
            }
        })
        .await
    }
}
