//! A cheap, unkeyed 64-bit digest of a string: 8 bytes at a time, multiply
//! and rotate. For choosing among a fixed number of places (a memory-store
//! shard, a top-K slot to compare) where a colliding input costs a little
//! contention or one string comparison, never a slower look-up: maps keyed
//! by request data keep their seeded hashers. SipHash there cost a
//! memory-store duplicate a second full hash of its key (issue 29's
//! profile). The one map hashed by it, [`ByDigest`], is keyed by names the
//! program chooses (the recorder's scopes).

/// The digest of `s`.
pub(crate) fn digest(s: &str) -> u64 {
    let b = s.as_bytes();
    fold(mix(b.len() as u64, b))
}

const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// `h` with `bytes` mixed in, 8 at a time (the last word zero-padded, built
/// byte by byte: a variable-length `copy_from_slice` was a libc `memcpy`
/// call per digest).
fn mix(mut h: u64, bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(K).rotate_left(29);
    }
    let tail = chunks
        .remainder()
        .iter()
        .rev()
        .fold(0u64, |w, &b| (w << 8) | u64::from(b));
    (h ^ tail).wrapping_mul(K)
}

/// Folds the high bits down: a caller taking `digest % n` for a small `n`
/// would otherwise see only the low bits of the last multiply.
fn fold(h: u64) -> u64 {
    h ^ (h >> 32)
}

/// A [`Hasher`](std::hash::Hasher) made of [`digest`]'s steps, for maps
/// keyed by names the program chooses (the recorder's scopes:
/// `namespace:scene`), where SipHash was most of a look-up (issue 29, round
/// eight). Unkeyed: never for keys taken from request data, where crafted
/// collisions would turn look-ups into scans.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct DigestHasher(u64);

impl std::hash::Hasher for DigestHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = mix(self.0 ^ bytes.len() as u64, bytes);
    }

    fn finish(&self) -> u64 {
        fold(self.0)
    }
}

/// Builds [`DigestHasher`]s: `HashMap<K, V, ByDigest>`.
pub(crate) type ByDigest = std::hash::BuildHasherDefault<DigestHasher>;

#[cfg(test)]
mod tests {
    use super::digest;

    /// Spreads keys that differ only in their last characters (the usual
    /// `scope:parts:<n>` shape) over 32 shards evenly enough.
    #[test]
    fn similar_keys_spread_over_shards() {
        let mut per = [0u32; 32];
        for i in 0..32_000 {
            per[(digest(&format!("ns:order-create:dup:{i}")) % 32) as usize] += 1;
        }
        let (min, max) = (per.iter().min().unwrap(), per.iter().max().unwrap());
        assert!(*min > 700 && *max < 1300, "{per:?}");
        assert_ne!(digest("a"), digest("b"));
        // The tail is little-endian, as a zero-padded word read it before.
        assert_eq!(digest("abcdefghijk"), 0x594c_c5c7_afe9_c935);
        assert_ne!(digest(""), digest("\0"));
    }
}
