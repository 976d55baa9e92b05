//! One transition: the conditional `UPDATE` in the caller's transaction, the
//! body on one matched row, and the reading of a zero-row update.
//!
//! The update and the body run inside a savepoint of the caller's transaction:
//! a body error rolls back to it, so the state is unchanged and a retry applies,
//! while whatever the caller wrote before the transition stays for the caller to
//! commit or roll back (and on PostgreSQL the transaction is usable again after
//! a failed statement in the body). Rolling back the whole transaction instead
//! would take the caller's own earlier writes with it, which only the caller may
//! decide.
//!
//! Without a savepoint (`savepoint = false`, an edge with one source state)
//! a failing body sets the row back to its source state by a compensating
//! `UPDATE`, and the caller must roll back to drop the body's rows.

use std::future::Future;

use sqlx::{Encode, Type};

use super::machine::StateMachine;
use super::outcome::Transition;
use super::statements::Statements;
use crate::db::caller_tx::tx_error;
use crate::db::savepoint::{Scope, compensated};
use crate::db::{Arg, SqlConn as StateConn, SqlDb as _};
use crate::error::Error;
use crate::handle::{Idem, recorder_for};
use crate::key::{Key, KeyPart};
use crate::observe::instrument::Fenced;
use crate::observe::{CallOutcome, Technique, instrument};

impl<T, E> Fenced for Result<Transition<T>, E> {
    fn fence(&self) -> Option<crate::fence::Fence> {
        None
    }
}

/// What one transition does: source states and target, and whether it runs
/// in a savepoint (without one, the edge has exactly one source state).
pub(crate) struct Edge<'a, M> {
    pub(crate) from: &'a [M],
    pub(crate) to: M,
    pub(crate) savepoint: bool,
}

/// The message of `savepoint = false` on an edge with several sources.
pub(crate) const ONE_SOURCE: &str = "a state transition without a savepoint needs exactly one source state: a failing body sets the row back to it";

/// What a transition returns, with its outcome label.
pub(crate) type Ended<T, E> = (CallOutcome, Result<Transition<T>, E>);

/// Runs a whole transition (`op`: begin, body, finish) inside the `idem`
/// span, counted under the `handle`'s stats (or the installed global's;
/// without either, the `metrics` facade only). The span's key is
/// `ns:table:key`.
pub(crate) async fn observed<R, F>(
    handle: Option<&Idem>,
    table: &str,
    key: &(dyn KeyPart + Sync),
    op: F,
) -> R
where
    R: Fenced,
    F: Future<Output = (CallOutcome, R)>,
{
    let (recorder, ns) = recorder_for(handle);
    let name = Key::from_parts(ns, table, &[key]);
    instrument(recorder, Technique::StateMachine, &name, || op).await
}

/// The key as errors name it: `table:key`.
pub(crate) fn error_key(table: &str, key: &(dyn KeyPart + Sync)) -> String {
    Key::from_parts("", table, &[key]).as_str().to_owned()
}

/// After the update: run the body, or the transition already ended.
pub(crate) enum Step<T, E> {
    /// One row moved: run the body, then [`Savepoint::finish`].
    Go(Savepoint),
    /// Nothing to run: a repeat, an invalid transition, an error.
    Done(Ended<T, E>),
}

/// The savepoint an applied update holds until the body ends (or, without
/// one, how to set the row back).
#[derive(Debug)]
pub struct Savepoint {
    held: Scope,
    key: String,
    /// The compensating `UPDATE` and its source and target states.
    undo: (std::sync::Arc<str>, &'static str, &'static str),
}

/// Takes the savepoint and runs the update; on one matched row the caller
/// runs the body and calls [`Savepoint::finish`]. `name` is the key as
/// errors show it.
pub(crate) async fn begin<M, C, K, T, E>(
    stmts: &Statements,
    edge: Edge<'_, M>,
    conn: &mut C,
    key: &K,
    name: String,
) -> Step<T, E>
where
    M: StateMachine,
    C: StateConn + ?Sized,
    K: for<'q> Encode<'q, C::Db> + Type<C::Db> + Sync,
    E: From<Error>,
{
    let failed = |e: Error| Step::Done((CallOutcome::Failed, Err(E::from(e))));
    // The one mapping of the caller's SQL errors: a transition that lost to a
    // concurrent transaction is `TxConflict` (retry the transaction).
    let db = |e: sqlx::Error| tx_error(&name, e);
    let Some(update) = stmts.update(edge.from.len()) else {
        return failed(Error::Config(format!(
            "a transition of `{}` needs 1 to {} source states, got {}",
            M::NAME,
            M::STATES.len(),
            edge.from.len()
        )));
    };
    if !edge.savepoint && edge.from.len() != 1 {
        return failed(Error::Config(format!("`{name}`: {ONE_SOURCE}")));
    }
    let sp = match Scope::take(conn, "state", edge.savepoint).await {
        Ok(sp) => sp,
        Err(e) => return failed(db(e)),
    };
    let q = sqlx::query::<C::Db>(sqlx::AssertSqlSafe(update));
    let q = C::Db::bind(q, &[Arg::Text(edge.to.stored())]).bind(key);
    let from: Vec<Arg<'_>> = edge.from.iter().map(|f| Arg::Text(f.stored())).collect();
    let q = C::Db::bind(q, &from);
    let rows = C::Db::exec(conn.connection(), q).await;
    match rows {
        Ok(1) => Step::Go(Savepoint {
            held: sp,
            key: name,
            undo: (stmts.undo.clone(), edge.from[0].stored(), edge.to.stored()),
        }),
        Ok(0) => {
            if let Err(e) = sp.keep(conn).await {
                return failed(db(e));
            }
            match current(stmts, conn, key).await {
                Err(e) => failed(db(e)),
                Ok(None) => failed(Error::NotFound { key: name }),
                Ok(Some(found)) => Step::Done(judge(edge, found, &name)),
            }
        }
        Ok(n) => {
            // Without a savepoint the rows stay moved: the caller must roll
            // back (the error says the key column is not unique).
            let _ = sp.undo(conn).await;
            failed(Error::Config(format!(
                "`{name}`: the key column matched {n} rows; a state transition needs a unique key column"
            )))
        }
        Err(e) => {
            // A failed update moved nothing: no compensation.
            let _ = sp.undo(conn).await;
            failed(db(e))
        }
    }
}

impl Savepoint {
    /// The body ended: keep the savepoint (`Applied`), or roll back to it (or,
    /// without one, set the row `key` back to its source state) and return
    /// the body's error (`released`).
    pub(crate) async fn finish<C, K, T, E>(
        self,
        conn: &mut C,
        key: &K,
        out: Result<T, E>,
    ) -> Ended<T, E>
    where
        C: StateConn + ?Sized,
        K: for<'q> Encode<'q, C::Db> + Type<C::Db> + Sync,
        E: From<Error>,
    {
        let (label, r, compensate) = (self.held)
            .finish(conn, &self.key, out, CallOutcome::Applied)
            .await;
        if compensate {
            let (sql, from, to) = self.undo;
            let q = sqlx::query::<C::Db>(sqlx::AssertSqlSafe(sql));
            let q = C::Db::bind(q, &[Arg::Text(from)]).bind(key);
            let q = C::Db::bind(q, &[Arg::Text(to)]);
            let undone = C::Db::exec(conn.connection(), q).await.map(drop);
            compensated(&self.key, undone);
        }
        (label, r.map(Transition::Applied))
    }
}

/// A zero-row update: already there (or past it in an acyclic machine) is a
/// success; anything else is an invalid transition naming all three states.
fn judge<M: StateMachine, T, E: From<Error>>(
    edge: Edge<'_, M>,
    found: String,
    name: &str,
) -> (CallOutcome, Result<Transition<T>, E>) {
    match M::from_stored(&found) {
        Some(cur) if cur == edge.to || M::is_past(cur, edge.to) => (
            CallOutcome::AlreadyApplied,
            Ok(Transition::AlreadyApplied {
                current: cur.stored(),
            }),
        ),
        _ => {
            let from: Vec<&str> = edge.from.iter().map(|s| s.stored()).collect();
            let e = Error::InvalidTransition {
                key: name.to_owned(),
                from: from.join("|"),
                to: edge.to.stored().to_owned(),
                current: found,
            };
            (CallOutcome::InvalidTransition, Err(E::from(e)))
        }
    }
}

async fn current<C, K>(
    stmts: &Statements,
    conn: &mut C,
    key: &K,
) -> Result<Option<String>, sqlx::Error>
where
    C: StateConn + ?Sized,
    K: for<'q> Encode<'q, C::Db> + Type<C::Db> + Sync,
{
    let q = sqlx::query::<C::Db>(sqlx::AssertSqlSafe(stmts.current.clone())).bind(key);
    C::Db::text(conn.connection(), q).await
}
