//! Turning a stored record back into the caller's value or error, and the
//! encodings the guard stores.

use serde::de::DeserializeOwned;

use crate::error::Error;
use crate::fingerprint::Fingerprint;
use crate::hooks::Terminal;
use crate::outcome::{How, Outcome};
use crate::record::{self, Kind};
use crate::store::DoneRecord;

/// Decodes a finished record: a stored `Ok` value, or a stored terminal error.
pub(crate) fn replay<T, E>(
    key: &str,
    version: u32,
    rec: &DoneRecord,
    how: How,
    terminal: Option<Terminal<E>>,
) -> Result<Outcome<T>, E>
where
    T: DeserializeOwned,
    E: From<Error>,
{
    let (kind, json) = record::open(key, version, &rec.payload)?;
    match kind {
        Kind::Ok => Ok(Outcome::new(record::decode(key, json)?, how, rec.fence)),
        Kind::Err => match terminal {
            Some(t) => Err((t.decode)(json).map_err(|e| Error::codec(key, e))?),
            None => Err(Error::codec(
                key,
                "a terminal error is stored but this function declares no `terminal` predicate",
            )
            .into()),
        },
    }
}

/// Decodes the `Ok` value a same-process holder handed over on the degraded
/// path (only `Ok` values are handed over).
pub(super) fn handed<T: DeserializeOwned>(
    key: &str,
    version: u32,
    payload: &[u8],
) -> Result<T, Error> {
    match record::open(key, version, payload)? {
        (Kind::Ok, json) => record::decode(key, json),
        (Kind::Err, _) => Err(Error::codec(key, "a handed-over result holds an error")),
    }
}

pub(crate) fn mismatch(key: &str, stored: Fingerprint, given: Fingerprint) -> Error {
    Error::PayloadMismatch {
        key: key.to_owned(),
        stored: stored.to_hex(),
        given: given.to_hex(),
    }
}

/// The record of a successful result.
pub(crate) fn encode_ok<T: serde::Serialize>(
    key: &str,
    version: u32,
    value: &T,
) -> Result<Vec<u8>, Error> {
    record::encode(key, version, Kind::Ok, value)
}

/// The record of a terminal error.
pub(super) fn encode_err<E>(
    key: &str,
    version: u32,
    e: &E,
    t: &Terminal<E>,
) -> Result<Vec<u8>, Error> {
    let json = (t.encode)(e).map_err(|x| Error::codec(key, x))?;
    Ok(record::encode_json(version, Kind::Err, &json))
}
