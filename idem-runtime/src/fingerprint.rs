//! Canonical request fingerprints.
//!
//! A fingerprint answers "is this retry the same request?". It must not depend on
//! incidental encoding details: map iteration order (`HashMap`), or whether some
//! crate in the build turned on `serde_json/preserve_order`. So values go through
//! `serde_json::Value` and are written back out with object keys sorted by this
//! module, then hashed with blake3 and truncated to 128 bits.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

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
    buf: String,
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
            buf: String::new(),
            error: None,
        }
    }

    /// Adds one value in canonical form.
    pub fn add<T: Serialize + ?Sized>(&mut self, value: &T) -> &mut Self {
        match serde_json::to_value(value) {
            Ok(v) => {
                self.buf.clear();
                write_canonical(&mut self.buf, &v);
                self.hasher.update(&(self.buf.len() as u64).to_le_bytes());
                self.hasher.update(self.buf.as_bytes());
            }
            Err(e) => self.error = Some(e.to_string()),
        }
        self
    }

    /// The fingerprint, or the serialisation error of a value that could not be encoded.
    pub fn finish(&self) -> Result<Fingerprint, String> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let mut out = [0u8; 16];
        out.copy_from_slice(&self.hasher.finalize().as_bytes()[..16]);
        if out == [0; 16] {
            out[0] = 1; // keep NONE reserved
        }
        Ok(Fingerprint(out))
    }
}

/// Fingerprint of a single value.
///
/// ```
/// use std::collections::HashMap;
/// let a: HashMap<_, _> = [("x", 1), ("y", 2)].into();
/// let b: HashMap<_, _> = [("y", 2), ("x", 1)].into();
/// assert_eq!(idem_runtime::fingerprint::of(&a), idem_runtime::fingerprint::of(&b));
/// ```
pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<Fingerprint, String> {
    FingerprintBuilder::new().add(value).finish()
}

fn write_canonical(out: &mut String, v: &Value) {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(out, v);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, item);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, HashMap};

    #[test]
    fn order_of_values_matters_but_map_order_does_not() {
        let mut a = FingerprintBuilder::new();
        a.add(&1).add(&2);
        let mut b = FingerprintBuilder::new();
        b.add(&2).add(&1);
        assert_ne!(a.finish(), b.finish());
    }

    proptest::proptest! {
        #[test]
        fn independent_of_map_order(entries in proptest::collection::vec(("[a-z]{1,6}", 0i64..1000), 0..20)) {
            let h: HashMap<String, i64> = entries.iter().cloned().collect();
            let b: BTreeMap<String, i64> = entries.iter().cloned().collect();
            let mut rev: Vec<_> = b.iter().map(|(k, v)| (k.clone(), *v)).collect();
            rev.reverse();
            let obj = serde_json::Value::Object(rev.into_iter().map(|(k, v)| (k, v.into())).collect());
            proptest::prop_assert_eq!(of(&h), of(&b));
            proptest::prop_assert_eq!(of(&h), of(&obj));
        }
    }
}
