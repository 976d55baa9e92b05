//! The one mapping of a driver error met in the *caller's* transaction to the
//! caller's `idem::Error`. Apart from [`classify`](super::classify) (which the
//! stores use too): this half names the crate's `Error`, which sits above the
//! stores, so the SQL kernel the stores build on stays below them.

use crate::sql_kernel::classify::{Failure, classify};
use crate::sql_kernel::retry::is_retryable_conflict;

/// A driver error met in the *caller's* transaction, as the caller's
/// [`Error`](crate::error::Error): a conflict with a concurrent transaction is
/// [`Error::TxConflict`](crate::error::Error::TxConflict) (roll back and retry), a
/// missing table is a setup mistake (`Error::Config`), anything else
/// `Error::Database`. `key` names what the statement was about.
///
/// The one mapping for every technique that runs statements in the caller's
/// transaction (the transactional guard, state transitions, the consume log,
/// the optimistic and pessimistic locks, insert-once, their savepoints): the
/// same database answer is the same `idem::Error` whichever technique met it.
pub(crate) fn tx_error(key: &str, e: sqlx::Error) -> crate::error::Error {
    use crate::error::Error;
    if is_retryable_conflict(&e) {
        let code = match &e {
            sqlx::Error::Database(db) => db.code().map(|c| c.into_owned()),
            _ => None,
        };
        let hint = match code.as_deref() {
            Some("40001") if e.to_string().contains("serialize") => {
                "; under REPEATABLE READ or SERIALIZABLE a transaction that meets a row changed after its snapshot (a concurrent duplicate, a concurrent transition) is aborted instead of waiting: retry it (READ COMMITTED waits)"
            }
            Some("5" | "517") => {
                "; SQLite transactions that write must begin with `BEGIN IMMEDIATE` (`pool.begin_with(\"BEGIN IMMEDIATE\")`)"
            }
            _ => "",
        };
        return Error::TxConflict {
            key: key.to_owned(),
            detail: format!("{e}{hint}"),
        };
    }
    match classify(&e) {
        Failure::MissingObject => Error::Config(format!(
            "`{key}`: {e} (a table or column the statement names does not exist; \
             for idem's own tables run `migrate()` or apply `idem::sql::ddl()`)"
        )),
        _ => Error::Database {
            key: key.to_owned(),
            detail: e.to_string(),
        },
    }
}
