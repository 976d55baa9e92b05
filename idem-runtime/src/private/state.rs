//! What a `#[state_transition]` expansion and a `#[derive(StateMachine)]`
//! expansion call: a static [`StateSpec`] (table and columns, statements built
//! once), one [`run`] call handing the body to the same runner as the non-macro
//! [`transition`](crate::state::transition), and the derive's `sqlx` impls.

use std::sync::OnceLock;

use sqlx::{Encode, Type};

use crate::db::{Dialect, SqlDialect};
use crate::error::Error;
use crate::handle::Idem;
use crate::key::KeyPart;
use crate::state::{Columns, Edge, StateConn, Statements, observed};

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

/// Runs one transition as an expansion calls it.
#[allow(clippy::too_many_arguments)]
pub async fn run<R, M, C, K, F>(
    spec: &'static StateSpec,
    handle: Option<&Idem>,
    from: &'static [M],
    to: M,
    conn: &mut C,
    key: &K,
    body: F,
) -> R
where
    R: StateReturns,
    M: StateMachine,
    C: StateConn + ?Sized,
    K: for<'q> Encode<'q, C::Db> + Type<C::Db> + KeyPart + Sync,
    F: AsyncFnOnce(&mut C) -> BodyOf<R>,
{
    let stmts = match spec.statements(C::Db::DIALECT) {
        Ok(s) => s,
        Err(e) => return R::from_result(Err(e.into())),
    };
    let edge = Edge { from, to };
    R::from_result(observed(handle, spec.table, &stmts, edge, conn, key, body).await)
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
