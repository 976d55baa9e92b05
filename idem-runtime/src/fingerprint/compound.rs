//! The compound parts of the canonical encoding: sequences, maps and structs
//! (see [`super::canonical`] for the rules).

use serde::ser::{self, Serialize};

use super::canonical::{END, EncodeError, Encoder, MAP, STR, float, int, uint};

/// Sequences, tuples and tuple variants: elements in order, then `ends` × END.
pub(super) struct Seq<'a> {
    pub(super) out: &'a mut Vec<u8>,
    pub(super) ends: usize,
}

impl Seq<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), EncodeError> {
        value.serialize(Encoder(self.out))
    }
    fn close(self) -> Result<(), EncodeError> {
        self.out.extend(std::iter::repeat_n(END, self.ends));
        Ok(())
    }
}

/// The four element-by-element serde traits differ only in their names: one
/// body for all of them.
macro_rules! seq_impls {
    ($($tr:ident :: $method:ident),*) => {$(
        impl ser::$tr for Seq<'_> {
            type Ok = ();
            type Error = EncodeError;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), EncodeError> {
                self.element(value)
            }
            fn end(self) -> Result<(), EncodeError> {
                self.close()
            }
        }
    )*};
}
seq_impls!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// Maps and structs: entries encoded into a scratch buffer, then written
/// sorted by key bytes between MAP and END (plus `extra_ends` × END).
pub(super) struct Map<'a> {
    out: &'a mut Vec<u8>,
    buf: Vec<u8>,
    /// (key start, value start, end) in `buf`.
    entries: Vec<(usize, usize, usize)>,
    key: Option<(usize, usize)>,
    extra_ends: usize,
}

impl<'a> Map<'a> {
    /// A map of `len` entries (as serde announces it; 0 when unknown). The
    /// scratch buffers start at the size a small entry needs, so encoding a
    /// few short fields (an HTTP request's method, path and body digest)
    /// does not grow them a step at a time (an allocation profile:
    /// three reallocations per request).
    pub(super) fn new(out: &'a mut Vec<u8>, extra_ends: usize, len: usize) -> Self {
        Map {
            out,
            buf: Vec::with_capacity(48 * len),
            entries: Vec::with_capacity(len),
            key: None,
            extra_ends,
        }
    }
    fn key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), EncodeError> {
        let start = self.buf.len();
        key.serialize(Encoder(&mut self.buf))?;
        self.key = Some((start, self.buf.len()));
        Ok(())
    }
    fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), EncodeError> {
        let (k, v) = self
            .key
            .take()
            .ok_or_else(|| EncodeError("map value without a key".into()))?;
        value.serialize(Encoder(&mut self.buf))?;
        self.entries.push((k, v, self.buf.len()));
        Ok(())
    }
    fn field<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) -> Result<(), EncodeError> {
        self.key(name)?;
        self.value(value)
    }
    fn close(mut self) -> Result<(), EncodeError> {
        let buf = &self.buf;
        self.entries
            .sort_by(|a, b| buf[a.0..a.1].cmp(&buf[b.0..b.1]));
        self.out.reserve(buf.len() + 2 + self.extra_ends);
        self.out.push(MAP);
        for &(k, _, end) in &self.entries {
            self.out.extend_from_slice(&buf[k..end]);
        }
        self.out.push(END);
        self.out.extend(std::iter::repeat_n(END, self.extra_ends));
        Ok(())
    }
}

impl ser::SerializeMap for Map<'_> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), EncodeError> {
        self.key(key)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), EncodeError> {
        self.value(value)
    }
    fn end(self) -> Result<(), EncodeError> {
        self.close()
    }
}
impl ser::SerializeStructVariant for Map<'_> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<(), EncodeError> {
        self.field(name, value)
    }
    fn skip_field(&mut self, _name: &'static str) -> Result<(), EncodeError> {
        Ok(())
    }
    fn end(self) -> Result<(), EncodeError> {
        self.close()
    }
}

/// A struct: fields like map entries, or the number inside a
/// `serde_json::Number` under `arbitrary_precision` (so that feature, turned on
/// by any crate in the build, does not change fingerprints).
pub(super) enum Struct<'a> {
    Fields(Map<'a>),
    Number(&'a mut Vec<u8>),
}

impl ser::SerializeStruct for Struct<'_> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<(), EncodeError> {
        match self {
            Struct::Fields(map) => map.field(name, value),
            Struct::Number(out) => {
                let mut text = Vec::new();
                value.serialize(Encoder(&mut text))?;
                let digits = text
                    .get(9..)
                    .filter(|_| text.first() == Some(&STR))
                    .and_then(|d| std::str::from_utf8(d).ok())
                    .ok_or_else(|| EncodeError("malformed serde_json number".into()))?;
                number(out, digits)
            }
        }
    }
    fn skip_field(&mut self, _name: &'static str) -> Result<(), EncodeError> {
        Ok(())
    }
    fn end(self) -> Result<(), EncodeError> {
        match self {
            Struct::Fields(map) => map.close(),
            Struct::Number(_) => Ok(()),
        }
    }
}

/// A JSON number's text, encoded as the integer or float it denotes.
fn number(out: &mut Vec<u8>, digits: &str) -> Result<(), EncodeError> {
    if let Ok(u) = digits.parse::<u128>() {
        uint(out, u);
    } else if let Ok(i) = digits.parse::<i128>() {
        int(out, i);
    } else {
        let f: f64 = digits
            .parse()
            .map_err(|_| EncodeError(format!("malformed serde_json number `{digits}`")))?;
        float(out, f);
    }
    Ok(())
}
