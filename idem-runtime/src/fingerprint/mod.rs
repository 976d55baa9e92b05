//! Canonical request fingerprints.
//!
//! A fingerprint answers "is this retry the same request?". It must not depend on
//! incidental encoding details (map iteration order, integer widths, serde_json
//! features some crate in the build turned on), and it must not confuse payloads
//! a lossy format would merge (NaN or infinity with `null`, `None` with
//! `Some(None)`). So values are written by an own serializer into a canonical,
//! typed byte encoding (`canonical` lists its rules), hashed with blake3 and
//! truncated to 128 bits. Any `Serialize` value encodes, including 128-bit
//! integers and maps with non-string keys; only a `Serialize` impl that itself
//! fails is an error (`Error::Codec` for the call).
//!
//! Upgrading: this encoding replaced a `serde_json::Value` round trip, so
//! fingerprints computed by earlier versions differ. A record stored before the
//! upgrade keeps its old fingerprint until its ttl ends: a retry of that request
//! (same key, same payload) is answered `Error::PayloadMismatch` and its body does
//! not run. Nothing runs twice; for a clean switch, let such records expire (or
//! `forget` them) before relying on replays across the upgrade.

use std::fmt;

use serde::Serialize;

mod canonical;
mod compound;

/// A 128-bit digest of a request's payload. [`Fingerprint::NONE`] matches anything.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Fingerprint(pub [u8; 16]);

impl Fingerprint {
    /// The absence of a fingerprint: the function declared none, so any payload matches.
    pub const NONE: Fingerprint = Fingerprint([0; 16]);

    /// True unless this is [`Fingerprint::NONE`].
    pub fn is_some(&self) -> bool {
        *self != Self::NONE
    }

    /// Two fingerprints conflict when both are present and differ.
    pub fn conflicts_with(&self, other: &Fingerprint) -> bool {
        self.is_some() && other.is_some() && self != other
    }

    /// Lower-case hex.
    pub fn to_hex(&self) -> String {
        crate::key::hex(&self.0)
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({})", self.to_hex())
    }
}

/// Accumulates the fingerprint of several values (a function's `fingerprint = [...]`).
#[derive(Debug)]
pub struct FingerprintBuilder {
    hasher: blake3::Hasher,
    buf: Vec<u8>,
    error: Option<String>,
}

impl Default for FingerprintBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl FingerprintBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        FingerprintBuilder {
            hasher: blake3::Hasher::new(),
            buf: Vec::new(),
            error: None,
        }
    }

    /// Adds one value in canonical form. Encodings are self-delimiting, so a
    /// sequence of values hashes unambiguously.
    pub fn add<T: Serialize + ?Sized>(&mut self, value: &T) -> &mut Self {
        if self.error.is_some() {
            return self;
        }
        self.buf.clear();
        match canonical::encode(value, &mut self.buf) {
            Ok(()) => {
                self.hasher.update(&self.buf);
            }
            Err(e) => self.error = Some(e.0),
        }
        self
    }

    /// The fingerprint, or the serialisation error of a value that could not be encoded.
    pub fn finish(&self) -> Result<Fingerprint, String> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        Ok(digest(&self.hasher))
    }
}

/// One field of [`of_record`]: text, bytes, or absent.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Field<'a> {
    /// A `&str`, `Some(&str)` or `String` field.
    Str(&'a str),
    /// A field serialized with `serialize_bytes` (or `Some` of one).
    Bytes(&'a [u8]),
    /// A `None` field.
    None,
}

/// The fingerprint [`of`] gives a struct whose fields are `fields` (names
/// and values), hashed as they are encoded, with no scratch buffer and no
/// sort of encoded entries: a request's method, path and body are hashed on
/// every keyed HTTP request. The digest is `of`'s for the same struct (a
/// test pins it), so stored records stay comparable.
pub(crate) fn of_record(fields: &mut [(&str, Field<'_>)]) -> Fingerprint {
    // `Map::close`'s order: by encoded key, i.e. by the name's length (eight
    // little-endian bytes, compared byte by byte), then its bytes.
    fields.sort_unstable_by(|a, b| {
        let len = |n: &str| (n.len() as u64).to_le_bytes();
        len(a.0)
            .cmp(&len(b.0))
            .then_with(|| a.0.as_bytes().cmp(b.0.as_bytes()))
    });
    let mut feed = Feed {
        hasher: blake3::Hasher::new(),
        buf: [0; 128],
        len: 0,
    };
    feed.push(&[canonical::MAP]);
    for (name, value) in fields.iter() {
        feed.tagged(canonical::STR, name.as_bytes());
        match *value {
            Field::Str(s) => feed.tagged(canonical::STR, s.as_bytes()),
            Field::Bytes(b) => feed.tagged(canonical::BYTES, b),
            Field::None => feed.push(&[canonical::NULL]),
        }
    }
    feed.push(&[canonical::END]);
    feed.flush();
    digest(&feed.hasher)
}

/// Small writes gathered before they reach the hasher (each `update` call
/// has a fixed cost); long ones go straight through.
struct Feed {
    hasher: blake3::Hasher,
    buf: [u8; 128],
    len: usize,
}

impl Feed {
    /// `canonical::bytes`: the tag, the length (u64 LE), the bytes.
    fn tagged(&mut self, tag: u8, v: &[u8]) {
        self.push(&[tag]);
        self.push(&(v.len() as u64).to_le_bytes());
        self.push(v);
    }
    fn push(&mut self, v: &[u8]) {
        if self.len + v.len() > self.buf.len() {
            self.flush();
            if v.len() > self.buf.len() {
                self.hasher.update(v);
                return;
            }
        }
        self.buf[self.len..self.len + v.len()].copy_from_slice(v);
        self.len += v.len();
    }
    fn flush(&mut self) {
        self.hasher.update(&self.buf[..self.len]);
        self.len = 0;
    }
}

/// The first 128 bits of the hash; never [`Fingerprint::NONE`].
fn digest(h: &blake3::Hasher) -> Fingerprint {
    let mut out = [0u8; 16];
    out.copy_from_slice(&h.finalize().as_bytes()[..16]);
    if out == [0; 16] {
        out[0] = 1; // keep NONE reserved
    }
    Fingerprint(out)
}

/// Fingerprint of a single value.
///
/// ```
/// use std::collections::HashMap;
/// let a: HashMap<_, _> = [("x", 1), ("y", 2)].into();
/// let b: HashMap<_, _> = [("y", 2), ("x", 1)].into();
/// assert_eq!(idem::fingerprint::of(&a), idem::fingerprint::of(&b));
/// ```
pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<Fingerprint, String> {
    FingerprintBuilder::new().add(value).finish()
}

#[cfg(test)]
mod tests;
