//! Driver errors as store errors: the SQL kernel says what a `sqlx::Error`
//! means (`sql_kernel::classify`), this maps the meaning to a [`StoreError`]
//! kind and keeps the driver error as its `source()`.

use crate::sql_kernel::{Failure, classify};
use crate::store::StoreError;

/// Maps a driver error to the store's error kinds, keeping it as the source.
pub(crate) fn map_err(e: sqlx::Error) -> StoreError {
    let err = match classify(&e) {
        Failure::Decode => StoreError::codec(e.to_string()),
        Failure::Config => StoreError::config(e.to_string()),
        Failure::MissingObject => StoreError::config(format!(
            "{} (run `migrate()` or apply `idem::sql::ddl()`)",
            database_message(&e)
        )),
        Failure::Input => StoreError::input(database_message(&e)),
        _ => StoreError::unavailable(e.to_string()),
    };
    err.with_source(e)
}

/// The server's own message (without sqlx's "error returned from database"
/// prefix), or the whole error.
fn database_message(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(db) => db.message().to_owned(),
        other => other.to_string(),
    }
}

/// The `verify()` error for an idem table that a probe could not read.
pub(crate) fn missing(name: &str, e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::Database(db) => {
            let text = format!(
                "idem table `{name}` is missing or malformed: {} (run `migrate()` or apply `idem::sql::ddl()`)",
                db.message()
            );
            StoreError::config(text).with_source(sqlx::Error::Database(db))
        }
        other => map_err(other),
    }
}
