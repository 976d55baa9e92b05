//! [`Token`]: the value handed to clients, its generation and format check.

use std::fmt;

/// Characters of the URL-safe base64 alphabet (RFC 4648 §5).
const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
/// 32 bytes in unpadded base64url.
const LEN: usize = 43;

/// A one-time token: 43 URL-safe characters. `Display` shows it (it goes into
/// the form or response); `Debug` does not.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Token(String);

impl Token {
    /// 32 bytes from two UUID v4s (244 random bits from the OS generator).
    pub(crate) fn generate() -> Token {
        let mut bytes = [0u8; 32];
        bytes[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        bytes[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        Token(encode(&bytes))
    }

    /// The token if `s` has the format of one (no store is asked).
    pub(crate) fn check(s: &str) -> Option<Token> {
        let ok = s.len() == LEN && s.bytes().all(|b| ALPHABET.contains(&b));
        ok.then(|| Token(s.to_owned()))
    }

    /// What the store keeps instead of the token: 128 bits of its blake3 hash.
    pub(crate) fn digest(&self) -> String {
        crate::key::hex(&blake3::hash(self.0.as_bytes()).as_bytes()[..16])
    }

    /// The token text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The token text, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(LEN);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_url_safe_distinct_and_checked() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let t = Token::generate();
            assert_eq!(t.as_str().len(), LEN);
            assert_eq!(Token::check(t.as_str()), Some(t.clone()));
            assert!(seen.insert(t));
        }
        assert_eq!(encode(b"\xff\xff\xff\x00"), "____AA");
        for bad in [
            "",
            "short",
            &"A".repeat(44),
            &format!("{}=", "A".repeat(42)),
        ] {
            assert_eq!(Token::check(bad), None, "{bad}");
        }
        assert_eq!(format!("{:?}", Token::generate()), "Token(***)");
    }
}
