//! A finished record's result as an operator reads it, decoded by the record
//! codec without the function's types.

use super::DoneRecord;
use crate::error::Error;
use crate::record::{Kind, header};

/// A finished record's result as an operator reads it, without the
/// function's types: see [`DoneRecord::result`](super::DoneRecord::result).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StoredResult {
    /// The function's `version` the result was stored with.
    pub version: u32,
    /// A terminal business error (replayed as `Err`), not an `Ok` value.
    pub is_err: bool,
    /// The value, as the JSON it is stored as.
    pub json: serde_json::Value,
}

impl DoneRecord {
    /// The stored result, decoded as JSON: what the `idem inspect` command
    /// prints. A payload idem did not write is `Error::Codec` naming `key`.
    pub fn result(&self, key: &str) -> Result<StoredResult, Error> {
        let (version, kind, json) = header(&self.payload).map_err(|e| Error::codec(key, e))?;
        Ok(StoredResult {
            version,
            is_err: kind == Kind::Err,
            json: serde_json::from_slice(json).map_err(|e| Error::codec(key, e))?,
        })
    }
}
