//! What a `#[state_transition]` expansion and a `#[derive(StateMachine)]`
//! expansion call: a static `StateSpec` (table and columns, statements built
//! once), one [`run`] call handing the body to the same runner as the non-macro
//! [`transition`](crate::state::transition), and the derive's `sqlx` impls.

use std::future::Future;
use std::sync::OnceLock;

use sqlx::{Encode, Type};

use crate::db::{Dialect, SqlDialect};
use crate::error::Error;
use crate::handle::Idem;
use crate::key::KeyPart;
use crate::observe::CallOutcome;
use crate::state::{self, Columns, Edge, StateConn, Statements, Step, error_key};

pub use crate::__idem_state_sqlx as state_sqlx;
pub use crate::state::{Savepoint, StateMachine, Transition, UnknownState};
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
            statements: OnceLock::new(),
        }
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

/// How a transition ended, on its way out of the expansion's block.
pub struct Done<R: StateReturns> {
    outcome: CallOutcome,
    value: Result<Transition<R::Ok>, R::Err>,
}

impl<R: StateReturns> std::fmt::Debug for Done<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Done")
            .field("outcome", &self.outcome)
            .finish_non_exhaustive()
    }
}

/// After the update: the body's turn ([`Begun::Go`]), or already over.
#[derive(Debug)]
pub enum Begun<R: StateReturns> {
    /// One row moved: run the body, then [`finish`].
    Go(Savepoint),
    /// Nothing to run.
    Done(Done<R>),
}

/// Takes the savepoint and runs the update in `conn`.
pub async fn begin<R, M, C, K>(
    spec: &'static StateSpec,
    from: &'static [M],
    to: M,
    conn: &mut C,
    key: &K,
) -> Begun<R>
where
    R: StateReturns,
    M: StateMachine,
    C: StateConn + ?Sized,
    K: for<'q> Encode<'q, C::Db> + Type<C::Db> + KeyPart + Sync,
{
    let stmts = match spec.statements(C::Db::DIALECT) {
        Ok(s) => s,
        Err(e) => {
            return Begun::Done(Done {
                outcome: CallOutcome::Failed,
                value: Err(e.into()),
            });
        }
    };
    let name = error_key(spec.table, key);
    match state::begin(&stmts, Edge { from, to }, conn, key, name).await {
        Step::Go(sp) => Begun::Go(sp),
        Step::Done((outcome, value)) => Begun::Done(Done { outcome, value }),
    }
}

/// The body ended: release the savepoint, or roll back to it.
pub async fn finish<R, C>(sp: Savepoint, conn: &mut C, out: BodyOf<R>) -> Done<R>
where
    R: StateReturns,
    C: StateConn + ?Sized,
{
    let (outcome, value) = sp.finish(conn, out).await;
    Done { outcome, value }
}

/// Runs the expansion's block (`begin`, body, `finish`) in the `idem` span.
pub async fn observed<R, K>(
    spec: &'static StateSpec,
    handle: Option<&Idem>,
    key: &K,
    op: impl Future<Output = Done<R>>,
) -> R
where
    R: StateReturns,
    K: KeyPart + Sync,
{
    let r = state::observed(handle, spec.table, key, async {
        let d = op.await;
        (d.outcome, d.value)
    })
    .await;
    R::from_result(r)
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
