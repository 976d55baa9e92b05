//! One link of an error chain, looked at as a database error: `sqlx::Error`, or
//! a driver's own error type sitting directly in the chain. Feature-gated: without
//! a SQL feature no link is a database error.

use std::error::Error as StdError;

use super::UniqueViolation;

/// The unique violation this link reports, if it is one.
#[allow(unused_variables)]
pub(super) fn inspect_link(e: &(dyn StdError + 'static)) -> Option<UniqueViolation> {
    #[cfg(feature = "sql")]
    {
        if let Some(sqlx::Error::Database(db)) = e.downcast_ref::<sqlx::Error>() {
            return from_database_error(&**db);
        }
        if let Some(v) = from_driver_error(e) {
            return Some(v);
        }
    }
    None
}

#[cfg(feature = "sql")]
fn from_database_error(db: &dyn sqlx::error::DatabaseError) -> Option<UniqueViolation> {
    if !db.is_unique_violation() {
        return None;
    }
    if let Some(c) = db.constraint() {
        return Some(UniqueViolation {
            constraint: Some(c.to_owned()),
            table: db.table().map(str::to_owned),
            columns: Vec::new(),
        });
    }
    Some(super::message::parse_message(db.message()))
}

/// A driver error type sitting directly in a user's chain (not wrapped in `sqlx::Error`).
#[cfg(feature = "sql")]
fn from_driver_error(e: &(dyn StdError + 'static)) -> Option<UniqueViolation> {
    #[cfg(feature = "postgres")]
    if let Some(pg) = e.downcast_ref::<sqlx::postgres::PgDatabaseError>() {
        return from_database_error(pg);
    }
    #[cfg(feature = "mysql")]
    if let Some(my) = e.downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
        return from_database_error(my);
    }
    #[cfg(feature = "sqlite")]
    if let Some(lite) = e.downcast_ref::<sqlx::sqlite::SqliteError>() {
        return from_database_error(lite);
    }
    None
}
