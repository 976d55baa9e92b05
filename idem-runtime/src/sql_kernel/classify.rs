//! What a `sqlx::Error` means for the caller. A store and a technique report
//! failures in their own error types, but they must agree on the meaning: an
//! outage may have applied and is worth retrying, a missing table is a setup
//! mistake, and a value the column cannot hold is the caller's input, which
//! retrying (or opening a circuit breaker over) can never fix.

/// The meaning of a driver error (see [`classify`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// No answer, connection lost or refused, pool timeout, a server error,
    /// a deadlock: the statement may or may not have applied; a retry may work.
    Unavailable,
    /// A row came back, but a column is not of the expected type or missing.
    Decode,
    /// Driver configuration is wrong (malformed URL or options).
    Config,
    /// The table or column a statement names does not exist (migrations not run).
    MissingObject,
    /// A value the column cannot hold: longer than the column (SQLSTATE 22001,
    /// MySQL 1406), a byte the text encoding refuses (22021: PostgreSQL `TEXT`
    /// cannot hold NUL; 22P05), or over SQLite's size limit.
    Input,
}

/// Classifies a driver error.
pub fn classify(e: &sqlx::Error) -> Failure {
    use sqlx::Error as E;
    match e {
        E::ColumnDecode { .. }
        | E::Decode(_)
        | E::TypeNotFound { .. }
        | E::ColumnNotFound(_)
        | E::ColumnIndexOutOfBounds { .. } => Failure::Decode,
        E::Configuration(_) => Failure::Config,
        E::Database(db) if is_missing_object(&**db) => Failure::MissingObject,
        E::Database(db) if is_bad_value(&**db) => Failure::Input,
        _ => Failure::Unavailable,
    }
}

/// PostgreSQL undefined_table / undefined_column; MySQL 1146 (42S02) / 1054
/// (42S22); SQLite says so in its message.
fn is_missing_object(db: &dyn sqlx::error::DatabaseError) -> bool {
    let code = db.code();
    matches!(code.as_deref(), Some("42P01" | "42703" | "42S02" | "42S22"))
        || db.message().starts_with("no such table")
        || db.message().starts_with("no such column")
}

/// SQLSTATE 22001 string data right truncation (PostgreSQL; MySQL 1406 "Data too
/// long"), 22021 character not in repertoire (PostgreSQL's "invalid byte
/// sequence", NUL included), 22P05 untranslatable character, SQLite 18 (TOOBIG).
fn is_bad_value(db: &dyn sqlx::error::DatabaseError) -> bool {
    matches!(
        db.code().as_deref(),
        Some("22001" | "22021" | "22P05" | "18")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_side_errors() {
        assert_eq!(
            classify(&sqlx::Error::ColumnNotFound("x".into())),
            Failure::Decode
        );
        assert_eq!(
            classify(&sqlx::Error::Configuration("bad".into())),
            Failure::Config
        );
        assert_eq!(classify(&sqlx::Error::PoolTimedOut), Failure::Unavailable);
        assert_eq!(
            classify(&sqlx::Error::Protocol("eof".into())),
            Failure::Unavailable
        );
    }
}
