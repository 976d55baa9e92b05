//! The packed value kept at each record key, and the Redis key layout.
//!
//! One string per record, so a record costs one Redis key and one allocation:
//!
//! ```text
//! byte 0       state: 0xC1 = in progress (format 1), 0xD1 = done (format 1)
//! bytes 1..17  owner (16 bytes, big-endian u128)
//! bytes 17..25 fence (u64 big-endian)
//! bytes 25..41 request fingerprint (16 bytes)
//! bytes 41..   the encoded result (done records only; an in-progress value is exactly 41 bytes)
//! ```
//!
//! The record's life is the key's `PX` expiry: the lease while in progress, the
//! ttl once done. A fence of 0 is a claim taken without one (`native.rs`). The Lua
//! scripts in `scripts.rs` and the native claim read and write the same layout;
//! keep the two in step (the unit tests below pin the offsets they use).

use std::time::Duration;

use crate::fingerprint::Fingerprint;
use crate::outcome::Fence;
use crate::store::{DoneRecord, Owner, StoreError};

/// State byte of an in-progress claim.
pub(crate) const PENDING: u8 = 0xC1;
/// State byte of a finished record.
pub(crate) const DONE: u8 = 0xD1;
/// Length of the header (and of a whole in-progress value).
pub(crate) const HEADER: usize = 41;

/// A decoded record value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Pending {
        owner: Owner,
        fence: Fence,
        fingerprint: Fingerprint,
    },
    Done(DoneRecord),
}

/// Encodes an in-progress claim: the native claim writes it as it is (the claim
/// script builds the same bytes server-side, with the server's clock as fence).
pub(crate) fn encode_pending(owner: Owner, fence: Fence, fingerprint: Fingerprint) -> [u8; HEADER] {
    let mut v = [0u8; HEADER];
    v[0] = PENDING;
    v[1..17].copy_from_slice(&owner.to_bytes());
    v[17..25].copy_from_slice(&fence.get().to_be_bytes());
    v[25..41].copy_from_slice(&fingerprint.0);
    v
}

/// Decodes a value read from a record key. Takes the reply's buffer: a done
/// record's payload is that buffer minus the header, without a copy.
pub(crate) fn decode(mut bytes: Vec<u8>) -> Result<Value, StoreError> {
    if bytes.len() < HEADER {
        return Err(StoreError::codec(format!(
            "the Redis value is {} bytes, shorter than an idem record header ({HEADER} bytes): not an idem record of this format",
            bytes.len()
        )));
    }
    let owner = Owner::from_bytes(take16(&bytes[1..17]));
    let fence = Fence::new(u64::from_be_bytes([
        bytes[17], bytes[18], bytes[19], bytes[20], bytes[21], bytes[22], bytes[23], bytes[24],
    ]));
    let fingerprint = Fingerprint(take16(&bytes[25..41]));
    match bytes[0] {
        PENDING if bytes.len() == HEADER => Ok(Value::Pending {
            owner,
            fence,
            fingerprint,
        }),
        PENDING => Err(StoreError::codec(format!(
            "an in-progress idem record must be {HEADER} bytes, this one is {}",
            bytes.len()
        ))),
        DONE => {
            bytes.drain(..HEADER);
            Ok(Value::Done(DoneRecord {
                fingerprint,
                fence,
                owner,
                payload: bytes,
            }))
        }
        other => Err(StoreError::codec(format!(
            "unknown record state byte 0x{other:02x}: not an idem record of this format (expected 0x{PENDING:02x} or 0x{DONE:02x})"
        ))),
    }
}

fn take16(b: &[u8]) -> [u8; 16] {
    let mut out = [0u8; 16];
    out.copy_from_slice(b);
    out
}

/// The key layout: `<prefix>{<idem key>}`. The braces make the whole idem key the
/// Redis Cluster hash tag, so everything idem keeps for a key lands in one slot.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeyLayout {
    prefix: String,
}

impl KeyLayout {
    /// A layout with `prefix` in front of the hash tag. The prefix may not contain
    /// braces: Redis takes the *first* `{...}` as the hash tag.
    pub(crate) fn new(prefix: &str) -> Result<Self, StoreError> {
        if prefix.contains(['{', '}']) {
            return Err(StoreError::config(format!(
                "redis key prefix `{prefix}` contains a brace; it would replace idem's hash tag"
            )));
        }
        Ok(KeyLayout {
            prefix: prefix.to_owned(),
        })
    }

    /// The Redis key of an idem key.
    pub(crate) fn record_key(&self, key: &str) -> Vec<u8> {
        self.record_key_str(key).into_bytes()
    }

    /// [`record_key`](Self::record_key) as text (`key` is text, and so is the prefix).
    pub(crate) fn record_key_str(&self, key: &str) -> String {
        format!("{}{{{key}}}", self.prefix)
    }

    /// The idem key of a Redis record key (`<prefix>{<idem key>}`), if it is one.
    pub(crate) fn idem_key<'k>(&self, redis_key: &'k [u8]) -> Option<&'k str> {
        let inner = redis_key
            .strip_prefix(self.prefix.as_bytes())?
            .strip_prefix(b"{")?
            .strip_suffix(b"}")?;
        std::str::from_utf8(inner).ok()
    }
}

/// A record key written straight into a command's argument buffer (no key
/// buffer of its own per operation): `<prefix>{<idem key>}`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordKey<'a> {
    prefix: &'a str,
    key: &'a str,
    suffix: &'static str,
}

impl KeyLayout {
    /// The Redis key of an idem key, as a command argument.
    pub(crate) fn arg<'a>(&'a self, key: &'a str) -> RecordKey<'a> {
        self.arg_beside(key, "")
    }

    /// The Redis key `suffix` names beside an idem key's record, in its slot
    /// (the hash tag is the record key's braces), as a command argument.
    pub(crate) fn arg_beside<'a>(&'a self, key: &'a str, suffix: &'static str) -> RecordKey<'a> {
        RecordKey {
            prefix: &self.prefix,
            key,
            suffix,
        }
    }
}

impl redis::ToRedisArgs for RecordKey<'_> {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        let (prefix, key, suffix) = (self.prefix, self.key, self.suffix);
        super::eval::Parts([prefix, "{", key, "}", suffix].map(str::as_bytes))
            .write_redis_args(out);
    }
}

impl redis::ToSingleRedisArg for RecordKey<'_> {}

/// Milliseconds for `PX`, at least 1 (Redis rejects 0).
pub(crate) fn millis(d: Duration) -> u64 {
    // Capped at MAX_DURATION: Redis refuses an expiry beyond `i64` milliseconds
    // from now ("invalid expire time"), which would count as an outage.
    let d = d.min(crate::policy::MAX_DURATION);
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_round_trips() {
        let owner = Owner(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10);
        let fp = Fingerprint([7; 16]);
        let v = encode_pending(owner, Fence::new(1_764_000_000_123_456), fp);
        assert_eq!(
            decode(v.to_vec()).unwrap(),
            Value::Pending {
                owner,
                fence: Fence::new(1_764_000_000_123_456),
                fingerprint: fp
            }
        );
    }

    #[test]
    fn done_carries_payload() {
        let owner = Owner(42);
        let mut v = encode_pending(owner, Fence::new(9), Fingerprint([1; 16])).to_vec();
        v[0] = DONE;
        v.extend_from_slice(b"I1payload");
        let Value::Done(rec) = decode(v.clone()).unwrap() else {
            panic!("expected done")
        };
        assert_eq!(rec.payload, b"I1payload");
        assert_eq!(rec.owner, owner);
        assert_eq!(rec.fence, Fence::new(9));
    }

    #[test]
    fn garbage_is_a_codec_error() {
        for bad in [&b""[..], b"hello", &[0u8; 60], &[PENDING; 50]] {
            match decode(bad.to_vec()) {
                Err(StoreError::Codec(msg)) => assert!(!msg.is_empty()),
                other => panic!("{bad:?} decoded as {other:?}"),
            }
        }
    }

    #[test]
    fn keys_put_the_idem_key_in_the_hash_tag() {
        let l = KeyLayout::new("app:").unwrap();
        assert_eq!(l.record_key("ns:scene:1"), b"app:{ns:scene:1}");
        assert!(matches!(KeyLayout::new("a{b"), Err(StoreError::Config(_))));
    }

    #[test]
    fn record_key_args_match_record_keys() {
        use redis::ToRedisArgs as _;
        let l = KeyLayout::new("app:").unwrap();
        assert_eq!(l.arg("ns:a").to_redis_args(), vec![l.record_key("ns:a")]);
    }

    #[test]
    fn millis_is_never_zero() {
        assert_eq!(millis(Duration::from_micros(10)), 1);
        assert_eq!(millis(Duration::from_secs(2)), 2000);
    }
}
