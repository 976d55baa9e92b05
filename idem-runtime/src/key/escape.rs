//! Escaping of request data inside keys.
//!
//! `%`, `:`, `{`, `}`, `~` and control characters become `%XX` (upper-case hex),
//! so separators and Redis Cluster hash-tag braces only ever come from the
//! template. The only other `%` sequences in a key are the markers written by
//! this module's callers (`%-` none, `%+` some, `%#` digest): escaping can never
//! produce them, because it always follows `%` with a hex digit.

use std::fmt::Write as _;

/// True when `s` would be copied unchanged (the common case: ids and numbers).
pub(crate) fn is_plain(s: &str) -> bool {
    s.bytes().all(|b| {
        (b == b' ' || b.is_ascii_graphic()) && !matches!(b, b'%' | b':' | b'{' | b'}' | b'~')
    })
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

fn push_pct(out: &mut String, v: u32) {
    let _ = write!(out, "%{v:02X}");
}
