//! The non-macro API: the same statements and outcomes as
//! `#[idem::state_transition]`, for tables, keys and edges chosen at run time.

use sqlx::{Encode, Type};

use super::machine::StateMachine;
use super::outcome::Transition;
use super::run::{Edge, Step, begin, error_key, observed};
use super::statements::{Columns, Statements};
use crate::db::SqlConn as StateConn;
use crate::db::SqlDialect;
use crate::error::Error;
use crate::handle::Idem;
use crate::key::KeyPart;

/// Starts a transition of the row whose `key_column` equals `key`, in `conn`
/// (usually the caller's `sqlx::Transaction`).
///
/// ```text
/// let out = idem::state::transition(&mut tx, "t_order", "order_no", &order_no)
///     .from(OrderStatus::WaitPay)
///     .to(OrderStatus::PaySuccess)
///     .run(async |tx| { insert_ledger(tx, &pay_no).await })
///     .await?;
/// ```
///
/// Edges are checked at run time here (an undeclared one is `Error::Config`
/// before any statement); `#[state_transition]` checks them at compile time.
/// Identifiers are checked on every call.
///
/// Limitation: the body is an async closure taking the connection back, and
/// rustc (1.95) cannot prove such a future `Send` ("implementation of
/// `AsyncFnOnce` is not general enough"), so await it where `Send` is not
/// required, or use the attribute, whose expansion boxes the body as `Send`.
pub fn transition<'a, M, C, K>(
    conn: &'a mut C,
    table: &'a str,
    key_column: &'a str,
    key: &'a K,
) -> TransitionCall<'a, M, C, K>
where
    M: StateMachine,
    C: StateConn + ?Sized,
    K: for<'q> Encode<'q, C::Db> + Type<C::Db> + KeyPart + Sync,
{
    TransitionCall {
        conn,
        columns: Columns::new(table, key_column),
        key,
        from: Vec::new(),
        to: None,
        handle: None,
        savepoint: true,
    }
}

/// A transition being set up; see [`transition`].
#[must_use = "a transition does nothing until `.run(..)` is awaited"]
pub struct TransitionCall<'a, M, C: ?Sized, K> {
    conn: &'a mut C,
    columns: Columns<'a>,
    key: &'a K,
    from: Vec<M>,
    to: Option<M>,
    handle: Option<&'a Idem>,
    savepoint: bool,
}

impl<M: std::fmt::Debug, C: ?Sized, K> std::fmt::Debug for TransitionCall<'_, M, C, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransitionCall")
            .field("columns", &self.columns)
            .field("from", &self.from)
            .field("to", &self.to)
            .finish_non_exhaustive()
    }
}

impl<'a, M, C, K> TransitionCall<'a, M, C, K>
where
    M: StateMachine,
    C: StateConn + ?Sized,
    K: for<'q> Encode<'q, C::Db> + Type<C::Db> + KeyPart + Sync,
{
    /// A source state (call again for several).
    pub fn from(mut self, state: M) -> Self {
        self.from.push(state);
        self
    }

    /// The target state.
    pub fn to(mut self, state: M) -> Self {
        self.to = Some(state);
        self
    }

    /// The state column (default `status`).
    pub fn state_column(mut self, column: &'a str) -> Self {
        self.columns.state_column = column;
        self
    }

    /// A version column to increment with every transition.
    pub fn version_column(mut self, column: &'a str) -> Self {
        self.columns.version_column = Some(column);
        self
    }

    /// Counts the call in this handle's stats (default: the installed global's).
    pub fn handle(mut self, idem: &'a Idem) -> Self {
        self.handle = Some(idem);
        self
    }

    /// Whether the update and the body run in a savepoint of the transaction
    /// (the default: `true`). With one, a failing body rolls back to it: the
    /// row keeps its state, the body's rows go, and the transaction stays
    /// usable. `savepoint(false)` saves that statement: a failing body sets the
    /// row back to its source state by a compensating update (so the edge
    /// must have exactly one source state) and returns the body's error, and
    /// **the caller must roll the transaction back** to drop the body's rows
    /// (on PostgreSQL a failed statement leaves it aborted anyway).
    pub fn savepoint(mut self, savepoint: bool) -> Self {
        self.savepoint = savepoint;
        self
    }

    /// Moves the row and runs `body` in the same transaction (see
    /// [`Transition`]). A body error rolls the update back to a savepoint (or
    /// compensates, see [`savepoint`](Self::savepoint)) and is returned as is.
    pub async fn run<T, E, F>(self, body: F) -> Result<Transition<T>, E>
    where
        E: From<Error>,
        F: AsyncFnOnce(&mut C) -> Result<T, E>,
    {
        let Some(to) = self.to else {
            return Err(E::from(Error::Config(
                "a state transition needs a target: call `.to(state)`".into(),
            )));
        };
        if self.from.is_empty() {
            return Err(E::from(Error::Config(
                "a state transition needs a source: call `.from(state)`".into(),
            )));
        }
        if let Some(&from) = self.from.iter().find(|&&f| !M::can(f, to)) {
            return Err(E::from(Error::Config(format!(
                "`{}` declares no edge `{:?} -> {:?}` (stored `{}` -> `{}`)",
                M::NAME,
                from,
                to,
                from.stored(),
                to.stored()
            ))));
        }
        let stmts =
            Statements::build(C::Db::DIALECT, &self.columns, self.from.len()).map_err(E::from)?;
        let edge = Edge {
            from: &self.from,
            to,
            savepoint: self.savepoint,
        };
        let (table, conn, key) = (self.columns.table, self.conn, self.key);
        let name = error_key(table, key);
        observed(self.handle, table, key, async {
            match begin(&stmts, edge, &mut *conn, key, name).await {
                Step::Go(sp) => {
                    let out = body(&mut *conn).await;
                    sp.finish(conn, key, out).await
                }
                Step::Done(ended) => ended,
            }
        })
        .await
    }
}
