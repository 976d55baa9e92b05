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

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::{Encode, Type};

use super::conn::{StateConn, StateDb as _};
use super::machine::StateMachine;
use super::outcome::Transition;
use super::statements::Statements;
use crate::error::Error;
use crate::handle::{Idem, global};
use crate::key::{Key, KeyPart};
use crate::observe::instrument::Fenced;
use crate::observe::{CallOutcome, Recorder, Technique, instrument};

impl<T, E> Fenced for Result<Transition<T>, E> {
    fn fence(&self) -> Option<crate::fence::Fence> {
        None
    }
}

/// Counts calls made with no handle at all: a transition needs none (it only
/// talks to the caller's database), and the `metrics` facade still sees it.
static UNHANDLED: OnceLock<Recorder> = OnceLock::new();

/// Savepoint names: unique per process, so a transition nested in another's
/// body (or MySQL's "same name replaces" rule) cannot release the wrong one.
static SAVEPOINTS: AtomicU64 = AtomicU64::new(0);

/// What one transition does: source states, target, and the key's text for
/// errors and the span.
pub(crate) struct Edge<'a, M> {
    pub(crate) from: &'a [M],
    pub(crate) to: M,
}

/// Runs a transition inside the `idem` span, counted under the `handle`'s
/// stats (or the installed global's; without either, the `metrics` facade
/// only). `table` is the scene of the span's key (`ns:table:key`).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn observed<M, C, K, T, E, F>(
    handle: Option<&Idem>,
    table: &str,
    stmts: &Statements,
    edge: Edge<'_, M>,
    conn: &mut C,
    key: &K,
    body: F,
) -> Result<Transition<T>, E>
where
    M: StateMachine,
    C: StateConn + ?Sized,
    K: for<'q> Encode<'q, C::Db> + Type<C::Db> + KeyPart + Sync,
    E: From<Error>,
    F: AsyncFnOnce(&mut C) -> Result<T, E>,
{
    let handle = handle.or_else(|| global().ok());
    let (recorder, ns) = match handle {
        Some(h) => (&h.inner.recorder, h.namespace()),
        None => (UNHANDLED.get_or_init(Recorder::default), ""),
    };
    let name = Key::from_parts(ns, table, &[key as &(dyn KeyPart + Sync)]);
    instrument(recorder, Technique::StateMachine, &name, || async {
        let (outcome, r) = apply(stmts, edge, conn, key, name.as_str(), body).await;
        (outcome, r)
    })
    .await
}

/// The transition itself; `name` is the key as errors show it.
async fn apply<M, C, K, T, E, F>(
    stmts: &Statements,
    edge: Edge<'_, M>,
    conn: &mut C,
    key: &K,
    name: &str,
    body: F,
) -> (CallOutcome, Result<Transition<T>, E>)
where
    M: StateMachine,
    C: StateConn + ?Sized,
    K: for<'q> Encode<'q, C::Db> + Type<C::Db> + Sync,
    E: From<Error>,
    F: AsyncFnOnce(&mut C) -> Result<T, E>,
{
    let failed = |e: Error| (CallOutcome::Failed, Err(E::from(e)));
    let db = |e: sqlx::Error| Error::Database {
        key: name.to_owned(),
        detail: e.to_string(),
    };
    let Some(update) = stmts.update(edge.from.len()) else {
        return failed(Error::Config(format!(
            "a transition of `{}` needs 1 to {} source states, got {}",
            M::NAME,
            M::STATES.len(),
            edge.from.len()
        )));
    };
    let sp = format!("idem_state_{}", SAVEPOINTS.fetch_add(1, Ordering::Relaxed));
    if let Err(e) = C::Db::simple(conn.connection(), format!("SAVEPOINT {sp}")).await {
        return failed(db(e));
    }
    let q = sqlx::query::<C::Db>(sqlx::AssertSqlSafe(update));
    let mut q = C::Db::bind_state(q, edge.to.stored()).bind(key);
    for f in edge.from {
        q = C::Db::bind_state(q, f.stored());
    }
    let rows = C::Db::exec(conn.connection(), q).await;
    match rows {
        Ok(1) => match body(&mut *conn).await {
            Ok(v) => match release(conn, &sp).await {
                Ok(()) => (CallOutcome::Applied, Ok(Transition::Applied(v))),
                Err(e) => failed(db(e)),
            },
            Err(e) => {
                rollback(conn, &sp).await;
                (CallOutcome::Released, Err(e))
            }
        },
        Ok(0) => {
            if let Err(e) = release(conn, &sp).await {
                return failed(db(e));
            }
            match current(stmts, conn, key).await {
                Err(e) => failed(db(e)),
                Ok(None) => failed(Error::NotFound {
                    key: name.to_owned(),
                }),
                Ok(Some(found)) => judge(edge, found, name),
            }
        }
        Ok(n) => {
            rollback(conn, &sp).await;
            failed(Error::Config(format!(
                "`{name}`: the key column matched {n} rows; a state transition needs a unique key column"
            )))
        }
        Err(e) => {
            rollback(conn, &sp).await;
            failed(db(e))
        }
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

async fn release<C: StateConn + ?Sized>(conn: &mut C, sp: &str) -> Result<(), sqlx::Error> {
    C::Db::simple(conn.connection(), format!("RELEASE SAVEPOINT {sp}")).await
}

/// Undoes the update (and the body's writes). A failure here leaves the
/// caller's transaction unusable, so its commit fails too: logged, and the
/// original error is what the caller sees.
async fn rollback<C: StateConn + ?Sized>(conn: &mut C, sp: &str) {
    let sql = format!("ROLLBACK TO SAVEPOINT {sp}");
    if let Err(e) = C::Db::simple(conn.connection(), sql).await {
        tracing::warn!(error = %e, "idem: rolling back a state transition's savepoint failed");
        return;
    }
    let _ = release(conn, sp).await;
}
