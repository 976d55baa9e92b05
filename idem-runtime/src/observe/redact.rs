//! Keys in logs: idem's spans and log lines carry a short hash of a key, not the
//! key. A key is made of request data (user ids, order numbers, sometimes an
//! email or a token), and logs travel further than the store does. Opt in to raw
//! keys per handle with `IdemBuilder::log_raw_keys(true)`; find a key's lines by
//! its hash with [`key_hash`].

use std::fmt;

/// The hash idem's logs print for a rendered key: `#` and 16 hex digits of its
/// blake3 hash (64 bits: no collisions among the keys one log shows).
///
/// ```
/// use idem::observe::key_hash;
/// let h = key_hash("shop:order-create:42:req-1").to_string();
/// assert_eq!(h.len(), 17);
/// assert!(h.starts_with('#') && !h.contains("42"));
/// ```
pub fn key_hash(key: &str) -> KeyHash<'_> {
    KeyHash(key)
}

/// A key shown as its hash (see [`key_hash`]); formats lazily, so a log line
/// nobody records costs no hashing.
#[derive(Clone, Copy)]
pub struct KeyHash<'a>(&'a str);

impl fmt::Display for KeyHash<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = blake3::hash(self.0.as_bytes());
        f.write_str("#")?;
        for b in &h.as_bytes()[..8] {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for KeyHash<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
