//! Rendering idempotency keys: `namespace:scene:part:part`.
//!
//! Two rules make keys safe to build from request data:
//! - every part is escaped (`%`, `:`, `{`, `}`, `~`, ASCII control characters become
//!   `%XX`), so the separators and Redis Cluster hash-tag braces only ever come from
//!   the template, and distinct part tuples can never render the same key;
//! - a key longer than [`MAX_KEY_LEN`] keeps its readable `namespace:scene:` prefix
//!   and replaces the parts by their blake3 hash, so huge inputs cost a bounded key.
//!
//! Keys never contain module paths, so moving a function does not orphan its records.

use std::fmt::{self, Write as _};

/// Keys longer than this many bytes have their parts replaced by a hash.
pub const MAX_KEY_LEN: usize = 200;

/// A rendered idempotency key, ready for a store.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Key {
    text: String,
    scope_len: usize,
}

impl Key {
    /// The full key text (`ns:scene:parts`).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The scene (first template segment), used as the metrics `scope` label.
    pub fn scope(&self) -> &str {
        &self.text[..self.scope_len]
    }

    /// Builds a key from a scene and parts the way the non-macro API does.
    ///
    /// ```
    /// use idem_runtime::key::{Key, KeyPart};
    /// let k = Key::from_parts("shop", "order-create", &[&42u64 as &(dyn KeyPart + Sync), &"a:b"]);
    /// assert_eq!(k.as_str(), "shop:order-create:42:a%3Ab");
    /// ```
    pub fn from_parts(namespace: &str, scene: &str, parts: &[&(dyn KeyPart + Sync)]) -> Key {
        let mut w = KeyWriter::new(namespace);
        w.literal(scene);
        w.end_scope();
        for p in parts {
            w.literal(":");
            w.part(*p);
        }
        w.finish()
    }

    /// A short, stable hex digest of the key, for logs where the key is sensitive.
    pub fn digest(&self) -> String {
        hex(&blake3::hash(self.text.as_bytes()).as_bytes()[..8])
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Incremental key builder: literal template text and escaped parts.
#[derive(Debug)]
pub struct KeyWriter {
    text: String,
    prefix_len: usize,
    scope_len: Option<usize>,
}

impl KeyWriter {
    /// Starts a key under `namespace` (escaped; empty means no namespace).
    pub fn new(namespace: &str) -> Self {
        let mut text = String::with_capacity(64);
        if !namespace.is_empty() {
            escape_into(&mut text, namespace);
            text.push(':');
        }
        let prefix_len = text.len();
        KeyWriter {
            text,
            prefix_len,
            scope_len: None,
        }
    }

    /// Appends template text verbatim. Template text is validated at compile time
    /// (no braces, no whitespace), so it needs no escaping.
    pub fn literal(&mut self, s: &str) -> &mut Self {
        self.text.push_str(s);
        self
    }

    /// Marks the end of the scene: the text so far (minus the namespace) is the scope.
    pub fn end_scope(&mut self) -> &mut Self {
        self.scope_len = Some(self.text.len());
        self
    }

    /// Appends one escaped part.
    pub fn part(&mut self, part: &dyn KeyPart) -> &mut Self {
        if self.scope_len.is_none() {
            // The scene is everything before the first part, without a trailing ':'.
            let end = self.text.trim_end_matches(':').len();
            self.scope_len = Some(end.max(self.prefix_len));
        }
        part.write_part(&mut PartWriter(&mut self.text));
        self
    }

    pub(crate) fn into_text(self) -> String {
        self.text
    }

    /// Finishes the key, hashing the parts if it is too long.
    pub fn finish(mut self) -> Key {
        let scope_end = self.scope_len.unwrap_or(self.text.len());
        if self.text.len() > MAX_KEY_LEN {
            let digest = blake3::hash(&self.text.as_bytes()[scope_end..]);
            self.text.truncate(scope_end);
            self.text.push_str(":#");
            self.text.push_str(&hex(&digest.as_bytes()[..20]));
        }
        Key {
            text: self.text,
            scope_len: scope_end,
        }
    }
}

/// Where a [`KeyPart`] writes itself; everything written is escaped.
#[derive(Debug)]
pub struct PartWriter<'a>(&'a mut String);

impl PartWriter<'_> {
    /// Writes text, escaping separators and control characters.
    pub fn write_str(&mut self, s: &str) {
        escape_into(self.0, s);
    }

    /// Writes anything `Display`, escaped.
    pub fn write_display(&mut self, v: &dyn fmt::Display) {
        struct Esc<'a>(&'a mut String);
        impl fmt::Write for Esc<'_> {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                escape_into(self.0, s);
                Ok(())
            }
        }
        // Writing into a String cannot fail.
        let _ = write!(Esc(self.0), "{v}");
    }

    /// Writes the marker for an absent optional part; escaping never produces it.
    pub fn write_none(&mut self) {
        self.0.push_str("%-");
    }
}

/// A value that can be a key part. Implemented for strings, integers, `bool`,
/// `char`, `uuid::Uuid`, references and `Option`s of those.
///
/// Implement it for your own identifiers by delegating to a field or to
/// [`PartWriter::write_display`]:
/// ```
/// use idem_runtime::key::{KeyPart, PartWriter};
/// struct OrderNo(String);
/// impl KeyPart for OrderNo {
///     fn write_part(&self, out: &mut PartWriter<'_>) { out.write_str(&self.0) }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as an idempotency key part",
    label = "not a key part",
    note = "key parts are strings, integers, bool, char, uuid::Uuid, or types implementing `idem::KeyPart`"
)]
pub trait KeyPart {
    /// Writes this part's text.
    fn write_part(&self, out: &mut PartWriter<'_>);
}

impl<T: KeyPart + ?Sized> KeyPart for &T {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        (**self).write_part(out)
    }
}
impl<T: KeyPart + ?Sized> KeyPart for &mut T {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        (**self).write_part(out)
    }
}
impl<T: KeyPart + ?Sized> KeyPart for Box<T> {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        (**self).write_part(out)
    }
}
impl<T: KeyPart> KeyPart for Option<T> {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        match self {
            Some(v) => v.write_part(out),
            None => out.write_none(),
        }
    }
}
impl KeyPart for str {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        out.write_str(self)
    }
}
impl KeyPart for String {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        out.write_str(self)
    }
}
impl KeyPart for std::borrow::Cow<'_, str> {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        out.write_str(self)
    }
}
impl KeyPart for uuid::Uuid {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        out.write_display(&self.hyphenated())
    }
}
macro_rules! display_parts {
    ($($t:ty),*) => {$(
        impl KeyPart for $t {
            fn write_part(&self, out: &mut PartWriter<'_>) { out.write_display(self) }
        }
    )*};
}
display_parts!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, bool, char
);

/// Escapes one part: `%`, `:`, `{`, `}`, `~` and control characters become `%XX`.
pub fn escape_into(out: &mut String, s: &str) {
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

pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(parts: &[&(dyn KeyPart + Sync)]) -> String {
        Key::from_parts("ns", "scene", parts).as_str().to_owned()
    }

    #[test]
    fn escapes_separators_and_braces() {
        assert_eq!(
            key(&[&"a:b", &"{x}", &"50%"]),
            "ns:scene:a%3Ab:%7Bx%7D:50%25"
        );
        assert_eq!(key(&[&"line\nbreak\0"]), "ns:scene:line%0Abreak%00");
    }

    #[test]
    fn none_differs_from_empty_and_from_text() {
        let none: Option<&str> = None;
        assert_ne!(key(&[&none]), key(&[&""]));
        assert_ne!(key(&[&none]), key(&[&"%-"]));
    }

    #[test]
    fn long_keys_are_hashed_but_keep_the_scene() {
        let big = "x".repeat(10_000);
        let k = Key::from_parts("ns", "scene", &[&big.as_str()]);
        assert!(k.as_str().len() <= MAX_KEY_LEN);
        assert!(k.as_str().starts_with("ns:scene:#"));
        assert_eq!(k.scope(), "ns:scene");
        let other = Key::from_parts("ns", "scene", &[&format!("{big}y").as_str()]);
        assert_ne!(k, other);
    }

    #[test]
    fn scope_excludes_parts() {
        let k = Key::from_parts("shop", "order-create", &[&1u8, &2u8]);
        assert_eq!(k.scope(), "shop:order-create");
    }

    proptest::proptest! {
        #[test]
        fn distinct_tuples_never_collide(a in ".*", b in ".*", c in ".*", d in ".*") {
            proptest::prop_assume!((&a, &b) != (&c, &d));
            proptest::prop_assert_ne!(key(&[&a, &b]), key(&[&c, &d]));
        }

        #[test]
        fn escaped_parts_contain_no_separator(a in "\\PC*") {
            let mut s = String::new();
            escape_into(&mut s, &a);
            let clean = !s.contains(':') && !s.contains('{') && !s.contains('}');
            proptest::prop_assert!(clean, "escaped part {:?} still has a separator", s);
        }
    }
}
