//! The stored form of a first result, so a replay returns exactly what the first
//! call returned, or a typed error, never garbage.
//!
//! Layout: `b"I1"`, the function's `version` (u32 LE), a kind byte (`0` = `Ok`,
//! `1` = a terminal `Err`), then JSON. Stores treat it as opaque bytes.

use serde::{Serialize, de::DeserializeOwned};

use crate::error::Error;

const MAGIC: &[u8; 2] = b"I1";
const HEADER: usize = 2 + 4 + 1;

/// Whether a stored payload is a success or a terminal error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The body's `Ok` value.
    Ok,
    /// A business error the function declared terminal (replayed as `Err`).
    Err,
}

/// Encodes a value with its version tag.
pub(crate) fn encode<V: Serialize + ?Sized>(
    key: &str,
    version: u32,
    kind: Kind,
    value: &V,
) -> Result<Vec<u8>, Error> {
    // Room for a typical result (the buffer lives until the store has it):
    // from 64 bytes a 200-byte result grew it twice, and at 64 callers each
    // reallocation was a trip through glibc's arena lock.
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.push(match kind {
        Kind::Ok => 0,
        Kind::Err => 1,
    });
    serde_json::to_writer(&mut out, value).map_err(|e| Error::codec(key, e))?;
    Ok(out)
}

/// Wraps JSON that is already encoded.
pub(crate) fn encode_json(version: u32, kind: Kind, json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + json.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.push(match kind {
        Kind::Ok => 0,
        Kind::Err => 1,
    });
    out.extend_from_slice(json);
    out
}

/// Reads the header: the kind and the JSON body, after checking format and version.
pub(crate) fn open<'a>(
    key: &str,
    version: u32,
    bytes: &'a [u8],
) -> Result<(Kind, &'a [u8]), Error> {
    let (stored, kind, json) = header(bytes).map_err(|e| Error::codec(key, e))?;
    if stored != version {
        return Err(Error::codec(
            key,
            format_args!("stored with version {stored}, this code reads version {version}"),
        ));
    }
    Ok((kind, json))
}

/// The stored version, the kind and the JSON body of any idem payload.
pub(crate) fn header(bytes: &[u8]) -> Result<(u32, Kind, &[u8]), String> {
    if bytes.len() < HEADER || &bytes[..2] != MAGIC {
        return Err("not an idem record (unknown format)".into());
    }
    let stored = u32::from_le_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]);
    let kind = match bytes[6] {
        0 => Kind::Ok,
        1 => Kind::Err,
        b => return Err(format!("unknown result kind {b}")),
    };
    Ok((stored, kind, &bytes[HEADER..]))
}

/// Decodes a JSON body into the caller's type.
pub(crate) fn decode<V: DeserializeOwned>(key: &str, json: &[u8]) -> Result<V, Error> {
    serde_json::from_slice(json).map_err(|e| Error::codec(key, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_version_check() {
        let b = encode("k", 3, Kind::Ok, &vec![1, 2, 3]).unwrap();
        let (kind, json) = open("k", 3, &b).unwrap();
        assert_eq!(kind, Kind::Ok);
        assert_eq!(decode::<Vec<i32>>("k", json).unwrap(), vec![1, 2, 3]);
        assert!(matches!(open("k", 4, &b), Err(Error::Codec { .. })));
        assert!(matches!(open("k", 3, b"garbage"), Err(Error::Codec { .. })));
        assert!(matches!(
            decode::<String>("k", b"{\"a\":"),
            Err(Error::Codec { .. })
        ));
    }
}
