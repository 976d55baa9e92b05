//! One consumed message: the log row inserted under a savepoint of the
//! caller's transaction, the body on a fresh row, and the reading of a unique
//! violation as a duplicate.
//!
//! The insert comes *before* the body: a concurrent delivery of the same
//! message (a broker redelivering while the first attempt still runs) then
//! waits on the row's unique key until the first transaction ends: committed,
//! it is a duplicate; rolled back, it inserts and runs. A body error rolls back
//! to the savepoint, so neither the log row nor the body's rows stay, and the
//! redelivery runs again.
//!
//! Without a savepoint (`savepoint = false`) the insert is the only statement
//! before the body. On PostgreSQL it is `ON CONFLICT DO NOTHING` (a unique
//! violation would abort the caller's transaction), and an insert of no row is
//! the duplicate; on MySQL and SQLite a unique violation fails only its own
//! statement. A failing body deletes the log row (the compensating statement)
//! and the caller must roll back to drop the body's rows.

use std::future::Future;

use super::message::{LogTable, Message};
use super::outcome::{Consumed, DuplicateOf};
use crate::backstop::{UniqueViolation, find_unique_violation};
use crate::db::caller_tx::tx_error;
use crate::db::savepoint::{Scope, compensated};
use crate::db::{Arg, Dialect, Failure, SqlConn, SqlDialect as _, classify};
use crate::error::Error;
use crate::handle::{Idem, recorder_for};
use crate::key::Key;
use crate::observe::instrument::Fenced;
use crate::observe::{CallOutcome, Technique, instrument};

impl<T, E> Fenced for Result<Consumed<T>, E> {
    fn fence(&self) -> Option<crate::fence::Fence> {
        None
    }
}

/// What a consume returns, with its outcome label.
pub(crate) type Ended<T, E> = (CallOutcome, Result<Consumed<T>, E>);

/// The keys of one message under the namespace of the handle it counts under.
#[derive(Debug)]
pub(crate) struct Keys {
    pub(crate) msg: Key,
    pub(crate) biz: Option<Key>,
}

/// Renders `message`'s keys under the namespace of `handle` (or the
/// installed global's, or none).
pub(crate) fn keys(handle: Option<&Idem>, message: &Message<'_>) -> Keys {
    let (_, ns) = recorder_for(handle);
    let (msg, biz) = message.keys(ns);
    Keys { msg, biz }
}

/// Runs a whole consume (`op`: begin, body, finish) inside the `idem` span
/// (`technique="consume"`, key = the message key), counted under `handle`'s
/// stats (or the installed global's; without either, the `metrics` facade
/// only).
pub(crate) async fn observed<R, F>(handle: Option<&Idem>, key: &Key, op: F) -> R
where
    R: Fenced,
    F: Future<Output = (CallOutcome, R)>,
{
    let (recorder, _) = recorder_for(handle);
    // The loop's `process` span (feature `otel`) shows the outcome too: a
    // redelivered message's span says `duplicate_message`.
    #[cfg(feature = "otel")]
    let op = {
        let process = tracing::Span::current();
        async move {
            let (outcome, r) = op.await;
            crate::observe::messaging::record_outcome(&process, outcome);
            (outcome, r)
        }
    };
    instrument(recorder, Technique::Consume, key, || op).await
}

/// After the insert: run the body, or the consume already ended.
#[derive(Debug)]
pub enum Step<T, E> {
    /// The row is new: run the body, then `LogEntry::finish`.
    Go(LogEntry),
    /// Nothing to run: a duplicate, or an error.
    Done(Ended<T, E>),
}

/// The fresh log row and the savepoint it holds until the body ends (or,
/// without one, the log table, to delete the row from if the body fails).
#[derive(Debug)]
pub struct LogEntry {
    scope: Scope,
    key: String,
    table: String,
}

/// Takes the savepoint (unless `savepoint` is false) and inserts the log row
/// into `conn`.
pub(crate) async fn begin<C, T, E>(
    log: &LogTable<'_>,
    conn: &mut C,
    keys: &Keys,
    savepoint: bool,
) -> Step<T, E>
where
    C: SqlConn + ?Sized,
    E: From<Error>,
{
    let name = keys.msg.as_str();
    let failed = |e: Error| Step::Done((CallOutcome::Failed, Err(E::from(e))));
    let mut insert = match log.insert(C::Db::DIALECT) {
        Ok(sql) => sql,
        Err(e) => return failed(e),
    };
    // Without a savepoint, PostgreSQL must not meet the unique violation.
    let quiet = !savepoint && C::Db::DIALECT == Dialect::Postgres;
    if quiet {
        insert.push_str(" ON CONFLICT DO NOTHING");
    }
    let sp = match Scope::take(conn, "consume", savepoint).await {
        Ok(sp) => sp,
        Err(e) => return failed(db_error(name, log.table, e)),
    };
    let args = [
        Arg::Text(name),
        Arg::OptText(keys.biz.as_ref().map(Key::as_str)),
        Arg::Int(log.retention_us()),
    ];
    let by = match conn.any().execute(&insert, &args).await {
        Ok(0) if quiet => match keys.biz {
            // Skipped: the message id is logged, or else the business id.
            Some(_) => DuplicateOf::BusinessId,
            None => DuplicateOf::MessageId,
        },
        Ok(_) => {
            return Step::Go(LogEntry {
                scope: sp,
                key: name.to_owned(),
                table: log.table.to_owned(),
            });
        }
        Err(e) => {
            // A failed insert wrote nothing: no compensation.
            let _ = sp.undo(conn).await;
            let Some(v) = find_unique_violation(&e) else {
                return failed(db_error(name, log.table, e));
            };
            duplicate_of(&v, log.table)
        }
    };
    // Both keys may be taken (the same message delivered again), and the
    // database names only one of them: a logged message id wins.
    let mut by = by;
    if by == DuplicateOf::BusinessId {
        let seen = crate::consume::sql::seen(C::Db::DIALECT, log.table);
        if let Ok(Some(_)) = conn.any().ints(&seen, &[Arg::Text(name)]).await {
            by = DuplicateOf::MessageId;
        }
    }
    Step::Done((
        CallOutcome::DuplicateMessage,
        Ok(Consumed::Duplicate { by }),
    ))
}

impl LogEntry {
    /// The body ended: keep the row and the body's writes (`Processed`), or
    /// roll both back to the savepoint (without one, delete the row) and
    /// return the body's error.
    pub(crate) async fn finish<C, T, E>(self, conn: &mut C, out: Result<T, E>) -> Ended<T, E>
    where
        C: SqlConn + ?Sized,
        E: From<Error>,
    {
        let (label, r, compensate) = (self.scope)
            .finish(conn, &self.key, out, CallOutcome::Executed)
            .await;
        if compensate {
            let forget = crate::consume::sql::forget(C::Db::DIALECT, &self.table);
            let undone = conn.any().execute(&forget, &[Arg::Text(&self.key)]).await;
            compensated(&self.key, undone.map(drop));
        }
        (label, r.map(Consumed::Processed))
    }
}

/// Which key a unique violation of the log names: the business-id index
/// (`<table>_biz_uk` by name on PostgreSQL and MySQL, its column on SQLite),
/// else the primary key, the message id.
fn duplicate_of(v: &UniqueViolation, table: &str) -> DuplicateOf {
    let biz = match v.constraint.as_deref() {
        Some(c) => c.strip_prefix(table) == Some("_biz_uk"),
        None => v.columns.iter().any(|c| c == "biz_key"),
    };
    if biz {
        DuplicateOf::BusinessId
    } else {
        DuplicateOf::MessageId
    }
}

/// A driver error on the log: a missing table is a setup mistake naming the
/// fix; anything else is what any statement in the caller's transaction
/// means (`tx_error`: a lost race with a concurrent transaction is
/// `Error::TxConflict`, to roll back and retry; else a database error on the
/// message's key).
pub(crate) fn db_error(key: &str, table: &str, e: sqlx::Error) -> Error {
    match classify(&e) {
        Failure::MissingObject => Error::Config(format!(
            "the consume log table `{table}` does not exist in the caller's database: run `migrate()` there, or apply `idem::consume::ddl`"
        )),
        _ => tx_error(key, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violations_name_their_key() {
        let named = |c: &str| UniqueViolation {
            constraint: Some(c.into()),
            table: None,
            columns: vec![],
        };
        assert_eq!(
            duplicate_of(&named("log_biz_uk"), "log"),
            DuplicateOf::BusinessId
        );
        assert_eq!(
            duplicate_of(&named("log_pkey"), "log"),
            DuplicateOf::MessageId
        );
        assert_eq!(
            duplicate_of(&named("PRIMARY"), "log"),
            DuplicateOf::MessageId
        );
        let lite = crate::backstop::parse_message("UNIQUE constraint failed: log.biz_key");
        assert_eq!(duplicate_of(&lite, "log"), DuplicateOf::BusinessId);
        let lite = crate::backstop::parse_message("UNIQUE constraint failed: log.msg_key");
        assert_eq!(duplicate_of(&lite, "log"), DuplicateOf::MessageId);
    }
}
