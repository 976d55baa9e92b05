//! Which keys a record row can hold, checked before anything is sent.

use crate::store::StoreError;

/// Longest key a record row holds (MySQL's `VARBINARY(768)`; the same bound on
/// every dialect). Keys from the guard are at most ~200 bytes plus the namespace
/// and scene; a longer one is refused rather than risking a server configured
/// without strict mode truncating two keys into one.
pub const MAX_KEY_BYTES: usize = 768;

pub(crate) fn check_key(key: &str) -> Result<(), StoreError> {
    if key.len() > MAX_KEY_BYTES {
        return Err(StoreError::config(format!(
            "key of {} bytes is longer than the {MAX_KEY_BYTES} a SQL record holds (shorten the namespace or scene)",
            key.len()
        )));
    }
    Ok(())
}
