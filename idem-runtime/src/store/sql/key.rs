//! Which keys a record row can hold. Checked before anything is sent, so a key
//! the table cannot hold is the caller's input error ([`StoreError::Input`]),
//! not a database error that looks like an outage and counts against the
//! circuit breaker.

use crate::sql_kernel::Dialect;
use crate::store::StoreError;

/// Longest key a record row holds (MySQL's `VARBINARY(768)`; the same bound on
/// every dialect). Keys from the guard are at most ~200 bytes plus the namespace
/// and scene; a longer one is refused rather than risking a server configured
/// without strict mode truncating two keys into one.
pub const MAX_KEY_BYTES: usize = 768;

/// `Ok` when `key` fits a record row of `dialect`: at most [`MAX_KEY_BYTES`], and
/// no NUL byte on PostgreSQL (its `TEXT` cannot hold one).
pub(crate) fn check_key(dialect: Dialect, key: &str) -> Result<(), StoreError> {
    if key.len() > MAX_KEY_BYTES {
        return Err(StoreError::input(format!(
            "key of {} bytes is longer than the {MAX_KEY_BYTES} a SQL record holds (shorten the namespace or scene)",
            key.len()
        )));
    }
    if dialect == Dialect::Postgres && key.contains('\0') {
        return Err(StoreError::input(
            "key contains a NUL byte, which PostgreSQL text cannot hold",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_keys_everywhere_nul_on_postgres() {
        let at_limit = "k".repeat(MAX_KEY_BYTES);
        let over = "k".repeat(MAX_KEY_BYTES + 1);
        for d in [Dialect::Postgres, Dialect::MySql, Dialect::Sqlite] {
            assert!(check_key(d, &at_limit).is_ok());
            assert!(matches!(check_key(d, &over), Err(StoreError::Input(_))));
        }
        assert!(matches!(
            check_key(Dialect::Postgres, "a\0b"),
            Err(StoreError::Input(r)) if r.contains("NUL")
        ));
        assert!(check_key(Dialect::MySql, "a\0b").is_ok());
        assert!(check_key(Dialect::Sqlite, "a\0b").is_ok());
    }
}
