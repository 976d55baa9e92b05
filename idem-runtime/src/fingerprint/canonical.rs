//! The canonical encoding fingerprints hash: a `serde::Serializer` writing a
//! self-delimiting, typed byte string.
//!
//! Each value starts with a tag byte. Equal content encodes equally however it
//! is typed or ordered, matching what `serde_json` would write (so a struct and
//! its `serde_json::Value` agree), while what JSON would lose stays distinct:
//! - integers of any width (128-bit included) by value; floats (`f32` widened)
//!   by bit pattern, with every NaN one value and `-0.0` as `0.0` (they compare
//!   equal); NaN and ±infinity are floats, not `null`;
//! - maps and structs alike, entries sorted by their encoded key bytes, so map
//!   iteration order never matters, for keys of any type (non-string keys are
//!   encoded as themselves, not as strings);
//! - tuples and tuple structs as sequences, `char` as a one-character string,
//!   newtypes as their content, unit and unit structs as `None` (JSON `null`);
//! - `Some(v)` as `v`, unless `v` itself encodes as `None` or `Some` (nested
//!   options), then behind a `Some` tag: `Some(None)` differs from `None`;
//! - enum variants in serde's externally tagged form: `"Name"` or `{"Name": …}`;
//! - `serde_json::Number` under `arbitrary_precision` as the number it holds.

use serde::ser::{self, Serialize};

use super::compound::{Map, Seq, Struct};

pub(super) const NULL: u8 = 0x00;
pub(super) const SOME: u8 = 0x01;
pub(super) const FALSE: u8 = 0x02;
pub(super) const TRUE: u8 = 0x03;
pub(super) const UINT: u8 = 0x04;
pub(super) const NINT: u8 = 0x05;
pub(super) const FLOAT: u8 = 0x06;
pub(super) const NAN: u8 = 0x07;
pub(super) const STR: u8 = 0x08;
pub(super) const BYTES: u8 = 0x09;
pub(super) const SEQ: u8 = 0x0a;
pub(super) const MAP: u8 = 0x0b;
pub(super) const END: u8 = 0x0c;

/// The struct `serde_json::Number` serializes as with `arbitrary_precision`.
const JSON_NUMBER: &str = "$serde_json::private::Number";

/// A `Serialize` impl failed.
#[derive(Debug)]
pub(crate) struct EncodeError(pub(crate) String);

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for EncodeError {}
impl ser::Error for EncodeError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        EncodeError(msg.to_string())
    }
}

/// Appends the canonical encoding of `value` to `out`.
pub(crate) fn encode<T: Serialize + ?Sized>(
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    value.serialize(Encoder(out))
}

pub(super) struct Encoder<'a>(pub(super) &'a mut Vec<u8>);

pub(super) fn uint(out: &mut Vec<u8>, v: u128) {
    out.push(UINT);
    out.extend_from_slice(&v.to_le_bytes());
}

pub(super) fn int(out: &mut Vec<u8>, v: i128) {
    match u128::try_from(v) {
        Ok(u) => uint(out, u),
        Err(_) => {
            out.push(NINT);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

pub(super) fn float(out: &mut Vec<u8>, v: f64) {
    if v.is_nan() {
        out.push(NAN);
    } else {
        out.push(FLOAT);
        let v = if v == 0.0 { 0.0f64 } else { v };
        out.extend_from_slice(&v.to_bits().to_le_bytes());
    }
}

pub(super) fn bytes(out: &mut Vec<u8>, tag: u8, v: &[u8]) {
    out.push(tag);
    out.extend_from_slice(&(v.len() as u64).to_le_bytes());
    out.extend_from_slice(v);
}

impl<'a> ser::Serializer for Encoder<'a> {
    type Ok = ();
    type Error = EncodeError;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Seq<'a>;
    type SerializeMap = Map<'a>;
    type SerializeStruct = Struct<'a>;
    type SerializeStructVariant = Map<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), EncodeError> {
        self.0.push(if v { TRUE } else { FALSE });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), EncodeError> {
        self.serialize_i128(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), EncodeError> {
        self.serialize_i128(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), EncodeError> {
        self.serialize_i128(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), EncodeError> {
        self.serialize_i128(v.into())
    }
    fn serialize_i128(self, v: i128) -> Result<(), EncodeError> {
        int(self.0, v);
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Result<(), EncodeError> {
        self.serialize_u128(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), EncodeError> {
        self.serialize_u128(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), EncodeError> {
        self.serialize_u128(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), EncodeError> {
        self.serialize_u128(v.into())
    }
    fn serialize_u128(self, v: u128) -> Result<(), EncodeError> {
        uint(self.0, v);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), EncodeError> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), EncodeError> {
        float(self.0, v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), EncodeError> {
        self.serialize_str(v.encode_utf8(&mut [0u8; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), EncodeError> {
        bytes(self.0, STR, v.as_bytes());
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), EncodeError> {
        bytes(self.0, BYTES, v);
        Ok(())
    }
    fn serialize_none(self) -> Result<(), EncodeError> {
        self.0.push(NULL);
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), EncodeError> {
        let start = self.0.len();
        value.serialize(Encoder(self.0))?;
        if matches!(self.0.get(start), Some(&NULL | &SOME)) {
            self.0.insert(start, SOME);
        }
        Ok(())
    }
    fn serialize_unit(self) -> Result<(), EncodeError> {
        self.serialize_none()
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), EncodeError> {
        self.serialize_none()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), EncodeError> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), EncodeError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), EncodeError> {
        self.0.push(MAP);
        bytes(self.0, STR, variant.as_bytes());
        value.serialize(Encoder(self.0))?;
        self.0.push(END);
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Seq<'a>, EncodeError> {
        self.0.push(SEQ);
        Ok(Seq {
            out: self.0,
            ends: 1,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'a>, EncodeError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Seq<'a>, EncodeError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Seq<'a>, EncodeError> {
        // {"variant": [..]}: the map and the sequence both end.
        self.0.push(MAP);
        bytes(self.0, STR, variant.as_bytes());
        self.0.push(SEQ);
        Ok(Seq {
            out: self.0,
            ends: 2,
        })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Map<'a>, EncodeError> {
        Ok(Map::new(self.0, 0, len.unwrap_or(0)))
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Struct<'a>, EncodeError> {
        if name == JSON_NUMBER {
            return Ok(Struct::Number(self.0));
        }
        Ok(Struct::Fields(Map::new(self.0, 0, len)))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Map<'a>, EncodeError> {
        // {"variant": {..}}: the fields are sorted, then the outer map ends.
        self.0.push(MAP);
        bytes(self.0, STR, variant.as_bytes());
        Ok(Map::new(self.0, 1, len))
    }
}
