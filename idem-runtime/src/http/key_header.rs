//! The `Idempotency-Key` header: present, once, visible ASCII, bounded length.
//! The key only ever enters the store as an escaped key part, so these checks
//! are about refusing garbage early (and answering 400), not about safety.

use http::HeaderMap;

use super::IDEMPOTENCY_KEY;

/// Why a request's key was refused.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum BadKey {
    Missing,
    Malformed(String),
}

/// The request's key, checked: 1 to `max_len` bytes of visible ASCII, one header.
pub(super) fn read(headers: &HeaderMap, max_len: usize) -> Result<String, BadKey> {
    let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
    let value = values.next().ok_or(BadKey::Missing)?;
    if values.next().is_some() {
        return Err(BadKey::Malformed(
            "the `Idempotency-Key` header is repeated; send it once".into(),
        ));
    }
    let bytes = value.as_bytes();
    if bytes.is_empty() {
        return Err(BadKey::Malformed(
            "the `Idempotency-Key` header is empty".into(),
        ));
    }
    if bytes.len() > max_len {
        return Err(BadKey::Malformed(format!(
            "the `Idempotency-Key` header is {} bytes long; at most {max_len} are accepted",
            bytes.len()
        )));
    }
    if !bytes.iter().all(|b| (0x21..=0x7e).contains(b)) {
        return Err(BadKey::Malformed(
            "the `Idempotency-Key` header must be visible ASCII without spaces (a UUID is a good key)"
                .into(),
        ));
    }
    // Visible ASCII is UTF-8.
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&[u8]]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(IDEMPOTENCY_KEY, http::HeaderValue::from_bytes(v).unwrap());
        }
        h
    }

    #[test]
    fn accepts_and_refuses() {
        assert_eq!(read(&headers(&[b"k-1"]), 8), Ok("k-1".into()));
        assert_eq!(read(&headers(&[]), 8), Err(BadKey::Missing));
        for bad in [
            headers(&[b""]),
            headers(&[b"123456789"]),
            headers(&[b"a b"]),
            headers(&[b"caf\xc3\xa9"]),
            headers(&[b"a", b"b"]),
        ] {
            assert!(
                matches!(read(&bad, 8), Err(BadKey::Malformed(_))),
                "{bad:?}"
            );
        }
    }
}
