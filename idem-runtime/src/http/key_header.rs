//! The `Idempotency-Key` header: one field, one key, bounded length, no control
//! characters. The IETF draft (`draft-ietf-httpapi-idempotency-key-header`)
//! defines the value as an RFC 8941 structured-field string (`"8e03978e-…"`);
//! most clients send the bare value (`8e03978e-…`). Both are read, and they are
//! one key: `"q"` and `q` name the same request.
//!
//! The key only ever enters the store as an escaped key part, so these checks
//! are about refusing garbage early (and answering 400), not about safety.

use http::HeaderMap;

use super::KEY_HEADER;

/// The longest key accepted by default (bytes, after unquoting).
pub(super) const DEFAULT_MAX_KEY_LEN: usize = 255;

/// Why a request's key was refused.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum BadKey {
    Missing,
    Malformed(String),
}

fn malformed(detail: impl Into<String>) -> BadKey {
    BadKey::Malformed(detail.into())
}

/// The request's key, checked: exactly one `Idempotency-Key` field; an RFC 8941
/// string (quoted) or a bare value; 1 to `max_len` bytes once unquoted; no
/// control characters, tabs, commas outside quotes, or text after the string.
pub(super) fn read(headers: &HeaderMap, max_len: usize) -> Result<String, BadKey> {
    let mut values = headers.get_all(&KEY_HEADER).iter();
    let value = values.next().ok_or(BadKey::Missing)?;
    if values.next().is_some() {
        return Err(malformed(
            "the `Idempotency-Key` header is repeated; send exactly one key in one field",
        ));
    }
    let bytes = trim_ows(value.as_bytes());
    if bytes.iter().any(|b| b.is_ascii_control()) {
        return Err(malformed(
            "the `Idempotency-Key` header contains a control character or a tab",
        ));
    }
    let key = match bytes.first() {
        Some(b'"') => sf_string(bytes)?,
        _ => bare(bytes)?,
    };
    if key.is_empty() {
        return Err(malformed("the `Idempotency-Key` header is empty"));
    }
    if key.len() > max_len {
        return Err(malformed(format!(
            "the `Idempotency-Key` header is {} bytes long; at most {max_len} are accepted",
            key.len()
        )));
    }
    Ok(key)
}

/// Optional whitespace around a field value (RFC 9110 OWS).
fn trim_ows(mut b: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = b {
        b = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = b {
        b = rest;
    }
    b
}

/// A bare value: visible ASCII without spaces, quotes or commas (a comma joins
/// two keys into one field: refused rather than guessed at).
fn bare(bytes: &[u8]) -> Result<String, BadKey> {
    if bytes.contains(&b',') {
        return Err(malformed(
            "the `Idempotency-Key` header holds a comma-joined list; send exactly one key",
        ));
    }
    if !bytes
        .iter()
        .all(|b| (0x21..=0x7e).contains(b) && *b != b'"')
    {
        return Err(malformed(
            "the `Idempotency-Key` header must be visible ASCII without spaces or quotes, \
             or an RFC 8941 string (a UUID is a good key)",
        ));
    }
    // Visible ASCII is UTF-8.
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// An RFC 8941 §3.3.3 string: `"`, printable ASCII with `\"` and `\\` escapes,
/// `"`, and nothing after it (no parameters, no second list member).
fn sf_string(bytes: &[u8]) -> Result<String, BadKey> {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes[1..].iter();
    while let Some(&b) = rest.next() {
        match b {
            b'\\' => match rest.next() {
                Some(&e @ (b'"' | b'\\')) => out.push(char::from(e)),
                _ => {
                    return Err(malformed(
                        "the quoted `Idempotency-Key` has an escape other than `\\\"` or `\\\\`",
                    ));
                }
            },
            b'"' => {
                let after = rest.as_slice();
                return if after.is_empty() {
                    Ok(out)
                } else if after.contains(&b',') {
                    Err(malformed(
                        "the `Idempotency-Key` header holds a comma-joined list; send exactly one key",
                    ))
                } else {
                    Err(malformed(
                        "the quoted `Idempotency-Key` is followed by other text (parameters are not accepted)",
                    ))
                };
            }
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                return Err(malformed(
                    "the quoted `Idempotency-Key` must be printable ASCII",
                ));
            }
        }
    }
    Err(malformed(
        "the quoted `Idempotency-Key` has no closing quote",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&[u8]]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(
                super::super::IDEMPOTENCY_KEY,
                http::HeaderValue::from_bytes(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn quoted_and_bare_forms_are_one_key() {
        assert_eq!(read(&headers(&[b"k-1"]), 8), Ok("k-1".into()));
        assert_eq!(read(&headers(&[b"\"k-1\""]), 8), Ok("k-1".into()));
        assert_eq!(read(&headers(&[b" \"k-1\" "]), 8), Ok("k-1".into()));
        assert_eq!(read(&headers(&[br#""a\"b\\""#]), 8), Ok(r#"a"b\"#.into()));
        // A comma inside a string is part of the key.
        assert_eq!(read(&headers(&[b"\"a,b\""]), 8), Ok("a,b".into()));
        // The limit counts the key, not its quotes.
        assert!(read(&headers(&[b"\"12345678\""]), 8).is_ok());
        assert_eq!(read(&headers(&[]), 8), Err(BadKey::Missing));
    }

    #[test]
    fn refuses_what_is_not_one_key() {
        for bad in [
            headers(&[b""]),
            headers(&[b"\"\""]),
            headers(&[b"123456789"]),
            headers(&[b"a b"]),
            headers(&[b"a\tb"]),
            headers(&[b"\"a\tb\""]),
            headers(&[b"caf\xc3\xa9"]),
            headers(&[b"a", b"b"]),
            headers(&[b"a,b"]),
            headers(&[b"\"a\", \"b\""]),
            headers(&[b"\"a\";p=1"]),
            headers(&[b"\"open"]),
            headers(&[b"\"bad\\escape\""]),
            headers(&[b"in\"side"]),
        ] {
            assert!(
                matches!(read(&bad, 8), Err(BadKey::Malformed(_))),
                "{bad:?}"
            );
        }
    }
}
