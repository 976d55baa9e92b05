//! What a `#[state_transition]` expansion and a `#[derive(StateMachine)]`
//! expansion call: a static `StateSpec` (table and columns, statements built
//! once), one [`run`] call handing the body to the same steps as the non-macro
//! [`transition`](crate::state::transition) (update, body, savepoint), and the
//! derive's `sqlx` impls and edge-check message.

use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;

use sqlx::{Encode, Type};

use super::lent::Lent;
use crate::db::{Dialect, SqlDialect, TxBody};
use crate::error::Error;
use crate::handle::Idem;
use crate::key::KeyPart;
use crate::observe::CallOutcome;
use crate::state::{self, Columns, Edge, StateConn, Statements, Step, error_key};

pub use crate::__idem_state_sqlx as state_sqlx;
pub use crate::state::{StateMachine, Transition, UnknownState};
pub use sqlx;

/// The static description of one `#[state_transition]` function.
#[derive(Debug)]
pub struct StateSpec {
    table: &'static str,
    key_column: &'static str,
    state_column: &'static str,
    version_column: Option<&'static str>,
    /// How many source states the edge has (statements are built for it).
    sources: usize,
    /// `savepoint = false`: no savepoint around the update and the body.
    savepoint: bool,
    statements: OnceLock<(Dialect, Result<Statements, String>)>,
}

impl StateSpec {
    /// A spec; identifiers are checked on first use, once.
    pub const fn new(
        table: &'static str,
        key_column: &'static str,
        state_column: &'static str,
        version_column: Option<&'static str>,
        sources: usize,
    ) -> StateSpec {
        StateSpec {
            table,
            key_column,
            state_column,
            version_column,
            sources,
            savepoint: true,
            statements: OnceLock::new(),
        }
    }

    /// `savepoint = false`: the transition takes no savepoint; a failing body
    /// sets the row back by a compensating update (one source state).
    pub const fn without_savepoint(mut self) -> StateSpec {
        self.savepoint = false;
        self
    }

    fn columns(&self) -> Columns<'static> {
        Columns {
            table: self.table,
            key_column: self.key_column,
            state_column: self.state_column,
            version_column: self.version_column,
        }
    }

    /// The statements for `dialect`: built and checked once (a generic
    /// function used with two databases builds the second one per call).
    fn statements(&self, dialect: Dialect) -> Result<std::borrow::Cow<'_, Statements>, Error> {
        let build = || Statements::build(dialect, &self.columns(), self.sources);
        let (d, built) = self
            .statements
            .get_or_init(|| (dialect, build().map_err(|e| e.to_string())));
        match built {
            _ if *d != dialect => build().map(std::borrow::Cow::Owned),
            Ok(s) => Ok(std::borrow::Cow::Borrowed(s)),
            Err(e) => Err(Error::Config(
                e.trim_start_matches("invalid idem configuration: ")
                    .to_owned(),
            )),
        }
    }
}

/// What a `#[state_transition]` function may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the result of a `#[state_transition]` function",
    label = "expected `Result<idem::Transition<T>, E>`",
    note = "a `#[state_transition]` function returns `Result<idem::Transition<T>, E>` with `E: From<idem::Error>`; its body returns `Result<T, E>`, the value of `Transition::Applied`"
)]
pub trait StateReturns: Sized {
    /// The body's value.
    type Ok;
    /// The error type.
    type Err: From<Error>;
    /// Back from a plain `Result`.
    fn from_result(r: Result<Transition<Self::Ok>, Self::Err>) -> Self;
}

impl<T, E: From<Error>> StateReturns for Result<Transition<T>, E> {
    type Ok = T;
    type Err = E;
    fn from_result(r: Self) -> Self {
        r
    }
}

/// The body's type for a declared return type `R`: `Result<T, E>`.
pub type BodyOf<R> = Result<<R as StateReturns>::Ok, <R as StateReturns>::Err>;

/// Runs one transition: the conditional update in `conn`, then, on one moved
/// row, `body` with the connection lent back ([`Lent`]), then the savepoint's
/// end, all in the `idem` span. The one call a `#[state_transition]`
/// expansion makes, typed by the declared return type `R` in its turbofish so
/// a wrong one is one error there (cached 0043a); boxed, as `run`, so the
/// bound is not checked a second time at the `.await`.
#[allow(clippy::too_many_arguments)]
pub fn run<'g, R, M, C, K, B>(
    spec: &'static StateSpec,
    from: &'static [M],
    to: M,
    handle: Option<&'g Idem>,
    key: &'g K,
    conn: &'g mut C,
    body: B,
) -> Pin<Box<dyn Future<Output = R> + Send + 'g>>
where
    R: StateReturns<Ok: Send, Err: Send> + 'g,
    M: StateMachine,
    C: StateConn + Send + ?Sized,
    K: for<'q> Encode<'q, C::Db> + Type<C::Db> + KeyPart + Sync,
    B: for<'a> FnOnce(Lent<'a, 'g, C>) -> TxBody<'a, R::Ok, R::Err> + Send + 'g,
{
    Box::pin(async move {
        let r = state::observed(handle, spec.table, key, async move {
            let stmts = match spec.statements(C::Db::DIALECT) {
                Ok(s) => s,
                Err(e) => return (CallOutcome::Failed, Err(e.into())),
            };
            let name = error_key(spec.table, key);
            let mut conn = conn;
            let edge = Edge {
                from,
                to,
                savepoint: spec.savepoint,
            };
            match state::begin(&stmts, edge, &mut *conn, key, name).await {
                Step::Go(sp) => {
                    let out = body(Lent::new(&mut conn)).await;
                    sp.finish(&mut *conn, key, out).await
                }
                Step::Done(ended) => ended,
            }
        })
        .await;
        R::from_result(r)
    })
}

/// `Decode` of a derived machine: the stored text back to a state.
pub fn decode_state<M: StateMachine>(s: &str) -> Result<M, sqlx::error::BoxDynError> {
    M::from_stored(s).ok_or_else(|| {
        Box::new(UnknownState {
            machine: M::NAME,
            value: s.to_owned(),
        }) as sqlx::error::BoxDynError
    })
}

/// The message of an undeclared edge, built in a `const` (a const panic
/// takes one `&str`, and only literals can be concatenated): the derive's
/// `__idem_edge` pushes the machine's literal text around the two states'
/// names, so it is one `if` over the declared edges, not a match arm per pair
/// of states. Past its capacity the text ends in `…`.
#[derive(Debug)]
pub struct EdgeMessage {
    buf: [u8; EdgeMessage::CAPACITY],
    len: usize,
    /// Cut: later pushes add nothing.
    full: bool,
}

impl EdgeMessage {
    const CAPACITY: usize = 2048;

    /// Empty.
    pub const fn new() -> EdgeMessage {
        EdgeMessage {
            buf: [0; EdgeMessage::CAPACITY],
            len: 0,
            full: false,
        }
    }

    /// `self` + `text`, cut at a character boundary when full.
    pub const fn push(mut self, text: &str) -> EdgeMessage {
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() && !self.full {
            let width = match b[i] {
                0..0xE0 => 1 + (b[i] >= 0xC0) as usize,
                0xE0..0xF0 => 3,
                _ => 4,
            };
            // Room for this character and the `…` (3 bytes) after it.
            if self.len + width + 3 > EdgeMessage::CAPACITY {
                return self.ellipsis();
            }
            let mut k = 0;
            while k < width && i + k < b.len() {
                self.buf[self.len] = b[i + k];
                self.len += 1;
                k += 1;
            }
            i += width;
        }
        self
    }

    const fn ellipsis(mut self) -> EdgeMessage {
        let dots = "…".as_bytes();
        let mut k = 0;
        while k < dots.len() {
            self.buf[self.len] = dots[k];
            self.len += 1;
            k += 1;
        }
        self.full = true;
        self
    }

    /// The text so far.
    pub const fn as_str(&self) -> &str {
        match core::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(s) => s,
            Err(_) => "undeclared edge",
        }
    }
}

impl Default for EdgeMessage {
    fn default() -> Self {
        EdgeMessage::new()
    }
}
