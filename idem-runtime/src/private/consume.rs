//! What a `#[consume_once]` expansion calls: a static `ConsumeSpec`
//! (consumer, message type, log table, retention), and one [`run`] call
//! handing the body to the same steps as the non-macro
//! [`consume_once`](crate::consume::consume_once) (insert, body, savepoint).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::lent::Lent;
use crate::consume::run::{self, Step};
use crate::consume::{Consumed, LogTable, Message};
use crate::db::{SqlConn, TxBody};
use crate::error::Error;
use crate::handle::Idem;
use crate::key::KeyPart;

/// The static description of one `#[consume_once]` function.
#[derive(Debug)]
pub struct ConsumeSpec {
    consumer: &'static str,
    msg_type: &'static str,
    table: &'static str,
    retention: Duration,
    /// `savepoint = false`: no savepoint around the insert and the body.
    savepoint: bool,
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
            savepoint: true,
        }
    }

    /// `savepoint = false`: the consume takes no savepoint; a failing body
    /// deletes the log row by a compensating statement.
    pub const fn without_savepoint(mut self) -> ConsumeSpec {
        self.savepoint = false;
        self
    }

    fn log(&self) -> LogTable<'static> {
        LogTable {
            table: self.table,
            retention: self.retention,
        }
    }
}

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

/// Runs one consume: the message's keys rendered under the handle's
/// namespace, the log row inserted in `conn`, then, on a fresh row, `body`
/// with the connection lent back ([`Lent`]), then the savepoint's end, all in
/// the `idem` span. The one call a `#[consume_once]` expansion makes, typed by
/// the declared return type `R` in its turbofish (one error there on a wrong
/// one) and boxed, as `run`. The keys are rendered before the future starts,
/// so it does not borrow the message.
pub fn run<'g, R, C, B>(
    spec: &'static ConsumeSpec,
    handle: Option<&'g Idem>,
    id: &(dyn KeyPart + Sync),
    biz_id: Option<&(dyn KeyPart + Sync)>,
    conn: &'g mut C,
    body: B,
) -> Pin<Box<dyn Future<Output = R> + Send + 'g>>
where
    R: ConsumeReturns<Ok: Send, Err: Send> + 'g,
    C: SqlConn + Send + ?Sized,
    B: for<'a> FnOnce(Lent<'a, 'g, C>) -> TxBody<'a, R::Ok, R::Err> + Send + 'g,
{
    let message = Message {
        consumer: spec.consumer,
        id,
        business: biz_id.map(|b| (spec.msg_type, b)),
    };
    let keys = run::keys(handle, &message);
    Box::pin(async move {
        let r = run::observed(handle, &keys.msg, async {
            let mut conn = conn;
            match run::begin(&spec.log(), &mut *conn, &keys, spec.savepoint).await {
                Step::Go(entry) => {
                    let out = body(Lent::new(&mut conn)).await;
                    entry.finish(&mut *conn, out).await
                }
                Step::Done(ended) => ended,
            }
        })
        .await;
        R::from_result(r)
    })
}
