//! Escaping of request data inside keys.
//!
//! `%`, `:`, `{`, `}`, `~` and control characters become `%XX` (upper-case hex),
//! so separators and Redis Cluster hash-tag braces only ever come from the
//! template. The only other `%` sequences in a key are the markers written by
//! this module's callers (`%-` none, `%+` some, `%#` digest): escaping can never
//! produce them, because it always follows `%` with a hex digit.

use std::fmt::Write as _;

/// Bytes copied unchanged: printable ASCII and space, but not the five
/// escaped ones. One table load per byte (the predicate spelled out cost
/// about eight instructions per byte of every key).
const PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] =
            (c == b' ' || c.is_ascii_graphic()) && !matches!(c, b'%' | b':' | b'{' | b'}' | b'~');
        b += 1;
    }
    t
};

/// True when `s` would be copied unchanged (the common case: ids and numbers).
pub(crate) fn is_plain(s: &str) -> bool {
    s.bytes().all(|b| PLAIN[usize::from(b)])
}

/// Appends `s` to `out`, escaped.
pub(crate) fn escape_into(out: &mut String, s: &str) {
    if is_plain(s) {
        out.push_str(s);
        return;
    }
    for c in s.chars() {
        match c {
            '%' | ':' | '{' | '}' | '~' => push_pct(out, c as u32),
            c if c.is_control() && (c as u32) < 0x80 => push_pct(out, c as u32),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    push_pct(out, u32::from(b));
                }
            }
            c => out.push(c),
        }
    }
}

/// The text `escape_into` was given, from its output (`%XX` back to bytes);
/// borrowed when nothing was escaped. A sequence that is not one this module
/// writes is kept as it is.
pub(crate) fn unescape(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('%') {
        return std::borrow::Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    std::borrow::Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

fn push_pct(out: &mut String, v: u32) {
    let _ = write!(out, "%{v:02X}");
}
