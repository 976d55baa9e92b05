//! State machines: a business row moves along declared edges, once.
//!
//! The seed's technique for payment callbacks and order flows: the transition
//! is one conditional update, `UPDATE t SET status = 'PAY_SUCCESS' WHERE
//! order_no = ? AND status IN ('WAIT_PAY')`, in the caller's transaction. One
//! row matched: this call moved it, and its other writes (ledger, pay time)
//! follow in the same transaction. None matched: the row is read again to tell
//! a repeated request (already in the target state, or past it in an acyclic
//! machine: a success, [`Transition::AlreadyApplied`]) from a row in a state the
//! edge does not start from (`Error::InvalidTransition`) or no row at all
//! (`Error::NotFound`). No idempotency record is involved: the row's state is
//! the record.
//!
//! - `machine`: [`StateMachine`], what the derive implements;
//! - `outcome`: [`Transition`];
//! - `statements`: the statement texts from checked identifiers ([`Columns`]);
//! - [`StateConn`] (transaction, pooled or bare connection) and the
//!   per-database driver calls ([`StateDb`]): the SQL kernel's
//!   [`SqlConn`](crate::db::SqlConn) and [`SqlDb`](crate::db::SqlDb), shared
//!   with the consume log;
//! - `run`: the transition, its savepoint and the `idem` span;
//! - `builder`: the non-macro API, [`transition`];
//! - `sqlx_text`: the derive's `sqlx` text impls, per enabled database.
//!
//! Conflicts: the update runs in the caller's transaction, which a deadlock
//! victim (MariaDB 1213, PostgreSQL 40P01), a serialization failure
//! (PostgreSQL 40001 under `REPEATABLE READ`) or a stale SQLite snapshot (517)
//! loses as a whole, so no statement is retried here: the transition returns
//! `Error::TxConflict` (the SQL kernel's one mapping, `db::classify`), and the
//! caller runs the whole transaction again, for example with
//! [`transaction`](crate::db::pessimistic::transaction).

mod builder;
mod machine;
mod outcome;
mod run;
mod sqlx_text;
mod statements;

pub use crate::db::{SqlConn as StateConn, SqlDb as StateDb};
pub use builder::{TransitionCall, transition};
pub use machine::{StateMachine, UnknownState};
pub use outcome::Transition;
pub use statements::Columns;

pub use run::Savepoint;
pub(crate) use run::{Edge, Step, begin, error_key, observed};
pub(crate) use statements::Statements;
