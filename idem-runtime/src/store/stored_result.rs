//! A finished record's result as an operator reads it: plain data, so the
//! stores that hand out [`DoneRecord`](super::DoneRecord)s can name it while
//! the record codec above them (`record.rs`) decodes into it.

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
