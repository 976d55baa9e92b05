//! What a `#[consume_once]` expansion calls: a static `ConsumeSpec`
//! (consumer, message type, log table, retention), the message's keys, and
//! `begin`/`finish` around the body: the same runner as the non-macro
//! [`consume_once`](crate::consume::consume_once).

use std::future::Future;
use std::time::Duration;

use crate::consume::run::{self, Keys, Step};
use crate::consume::{Consumed, LogEntry, LogTable, Message};
use crate::db::SqlConn;
use crate::error::Error;
use crate::handle::Idem;
use crate::key::KeyPart;
use crate::observe::CallOutcome;

/// The static description of one `#[consume_once]` function.
#[derive(Debug)]
pub struct ConsumeSpec {
    consumer: &'static str,
    msg_type: &'static str,
    table: &'static str,
    retention: Duration,
}

impl ConsumeSpec {
    /// A spec; the table name is checked on use.
    pub const fn new(
        consumer: &'static str,
        msg_type: &'static str,
        table: &'static str,
        retention: Duration,
    ) -> ConsumeSpec {
        ConsumeSpec {
            consumer,
            msg_type,
            table,
            retention,
        }
    }

    fn log(&self) -> LogTable<'static> {
        LogTable {
            table: self.table,
            retention: self.retention,
        }
    }
}

/// The message's keys under the handle's namespace.
pub fn keys(
    spec: &'static ConsumeSpec,
    handle: Option<&Idem>,
    id: &(dyn KeyPart + Sync),
    biz_id: Option<&(dyn KeyPart + Sync)>,
) -> MessageKeys {
    let message = Message {
        consumer: spec.consumer,
        id,
        business: biz_id.map(|b| (spec.msg_type, b)),
    };
    MessageKeys(run::keys(handle, &message))
}

/// A message's rendered keys.
#[derive(Debug)]
pub struct MessageKeys(Keys);

/// What a `#[consume_once]` function may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the result of a `#[consume_once]` function",
    label = "expected `Result<idem::Consumed<T>, E>`",
    note = "a `#[consume_once]` function returns `Result<idem::Consumed<T>, E>` with `E: From<idem::Error>`; its body returns `Result<T, E>`, the value of `Consumed::Processed`"
)]
pub trait ConsumeReturns: Sized {
    /// The body's value.
    type Ok;
    /// The error type.
    type Err: From<Error>;
    /// Back from a plain `Result`.
    fn from_result(r: Result<Consumed<Self::Ok>, Self::Err>) -> Self;
}

impl<T, E: From<Error>> ConsumeReturns for Result<Consumed<T>, E> {
    type Ok = T;
    type Err = E;
    fn from_result(r: Self) -> Self {
        r
    }
}

/// The body's type for a declared return type `R`: `Result<T, E>`.
pub type BodyOf<R> = Result<<R as ConsumeReturns>::Ok, <R as ConsumeReturns>::Err>;

/// How a consume ended, on its way out of the expansion's block.
pub struct Done<R: ConsumeReturns> {
    outcome: CallOutcome,
    value: Result<Consumed<R::Ok>, R::Err>,
}

impl<R: ConsumeReturns> std::fmt::Debug for Done<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Done")
            .field("outcome", &self.outcome)
            .finish_non_exhaustive()
    }
}

/// After the insert: the body's turn ([`Begun::Go`]), or already over.
#[derive(Debug)]
pub enum Begun<R: ConsumeReturns> {
    /// A fresh row: run the body, then [`finish`].
    Go(LogEntry),
    /// A duplicate or an error.
    Done(Done<R>),
}

/// Takes the savepoint and inserts the log row in `conn`.
pub async fn begin<R, C>(spec: &'static ConsumeSpec, conn: &mut C, keys: &MessageKeys) -> Begun<R>
where
    R: ConsumeReturns,
    C: SqlConn + ?Sized,
{
    match run::begin(&spec.log(), conn, &keys.0).await {
        Step::Go(entry) => Begun::Go(entry),
        Step::Done((outcome, value)) => Begun::Done(Done { outcome, value }),
    }
}

/// The body ended: keep the row, or roll back to the savepoint.
pub async fn finish<R, C>(entry: LogEntry, conn: &mut C, out: BodyOf<R>) -> Done<R>
where
    R: ConsumeReturns,
    C: SqlConn + ?Sized,
{
    let (outcome, value) = entry.finish(conn, out).await;
    Done { outcome, value }
}

/// Runs the expansion's block (`begin`, body, `finish`) in the `idem` span.
pub async fn observed<R>(
    handle: Option<&Idem>,
    keys: &MessageKeys,
    op: impl Future<Output = Done<R>>,
) -> R
where
    R: ConsumeReturns,
{
    let r = run::observed(handle, &keys.0.msg, async {
        let d = op.await;
        (d.outcome, d.value)
    })
    .await;
    R::from_result(r)
}
