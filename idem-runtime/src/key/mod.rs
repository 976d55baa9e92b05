//! Rendering idempotency keys: `namespace:scene:part:part`.
//!
//! Three rules make keys safe to build from request data:
//! - every part, the non-macro scene and the namespace are escaped (`%`, `:`,
//!   `{`, `}`, `~`, ASCII control characters become `%XX`), so separators and
//!   Redis Cluster hash-tag braces only ever come from the template, and
//!   distinct part tuples never render the same key;
//! - optional parts write markers escaping cannot produce: `None` is `%-`, and a
//!   `Some` whose own text starts with a marker (a nested option) is prefixed
//!   with `%+`, so `None` and `Some(None)` differ while `Some(v)` is just `v`;
//! - a key longer than [`MAX_KEY_LEN`] keeps its readable `namespace:scene`
//!   prefix and replaces the rest by its blake3 digest: `namespace:scene:%#<40 hex>`.
//!   `%#` never appears in an unhashed key, so no short value can render a
//!   hashed key. (Earlier versions wrote `namespace:scene:#<40 hex>`, which a
//!   value starting with `#` could forge. Records stored under such keys are not
//!   found under the new form: a retry of a long-keyed request first seen before
//!   the upgrade runs its body again, so drain or wait out the old records'
//!   ttl before upgrading where that matters.)
//!
//! Keys never contain module paths, so moving a function does not orphan its
//! records. Which functions may use which scene is checked per handle by the
//! scene registry (`crate::scene`).

use std::fmt::{self, Write as _};

mod escape;
mod namespace;
mod part;
mod writer;

pub(crate) use escape::escape_into;
pub(crate) use namespace::Namespace;
pub use part::{KeyPart, PartWriter};
pub(crate) use writer::KeyWriter;

/// Keys longer than this many bytes have everything after the scene replaced
/// by a hash.
pub const MAX_KEY_LEN: usize = 200;

/// Follows `scene:` in a hashed key. Unforgeable: see the module docs.
const DIGEST_MARK: &str = "%#";

/// A rendered idempotency key, ready for a store.
#[derive(Clone)]
pub struct Key {
    text: String,
    /// Bytes of the `namespace:` prefix (0 without a namespace).
    ns_len: usize,
    /// End of the scene: `text[..scope_len]` is `namespace:scene`.
    scope_len: usize,
}

impl Key {
    fn new(text: String, ns_len: usize, scope_len: usize) -> Self {
        Key {
            text,
            ns_len,
            scope_len,
        }
    }

    /// The full key text (`ns:scene:parts`).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The namespace and scene (`ns:scene`), used as the metrics `scope` label.
    pub fn scope(&self) -> &str {
        &self.text[..self.scope_len]
    }

    /// The scene as rendered (escaped), without the namespace.
    pub(crate) fn scene(&self) -> &str {
        &self.text[self.ns_len..self.scope_len]
    }

    /// The scene as written (unescaped): what configuration names scenes by.
    pub(crate) fn scene_as_written(&self) -> std::borrow::Cow<'_, str> {
        escape::unescape(self.scene())
    }

    /// Was this key rendered under `namespace`?
    #[cfg(test)]
    pub(crate) fn in_namespace(&self, namespace: &str) -> bool {
        self.in_escaped_namespace(&writer::escaped(namespace))
    }

    /// Was this key rendered under the namespace whose escaped form is `escaped`?
    pub(crate) fn in_escaped_namespace(&self, escaped: &str) -> bool {
        match self.text[..self.ns_len].strip_suffix(':') {
            None => escaped.is_empty(),
            Some(ns) => ns == escaped,
        }
    }

    /// Builds a key from a scene and parts the way the non-macro API does: the
    /// scene is escaped like a part.
    ///
    /// ```
    /// use idem::key::{Key, KeyPart};
    /// let k = Key::from_parts("shop", "order-create", &[&42u64 as &(dyn KeyPart + Sync), &"a:b"]);
    /// assert_eq!(k.as_str(), "shop:order-create:42:a%3Ab");
    /// ```
    pub fn from_parts(namespace: &str, scene: &str, parts: &[&(dyn KeyPart + Sync)]) -> Key {
        Key::render(&writer::escaped(namespace), scene, parts)
    }

    /// [`Key::from_parts`] under a namespace escaped beforehand (a handle's).
    pub(crate) fn from_parts_in(
        namespace: &Namespace,
        scene: &str,
        parts: &[&(dyn KeyPart + Sync)],
    ) -> Key {
        Key::render(namespace.escaped(), scene, parts)
    }

    /// The non-macro rendering under the escaped namespace `ns`.
    fn render(ns: &str, scene: &str, parts: &[&(dyn KeyPart + Sync)]) -> Key {
        let mut w = KeyWriter::in_namespace(ns, scene.len() + 16 * parts.len());
        w.scene(scene);
        for p in parts {
            w.literal(":");
            w.part(*p);
        }
        w.finish(ns)
    }

    /// A short, stable hex digest of the key, for logs where the key is sensitive.
    pub fn digest(&self) -> String {
        hex(&blake3::hash(self.text.as_bytes()).as_bytes()[..8])
    }
}

/// Two keys are equal when their text is: the text is what the store sees.
impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}
impl Eq for Key {}
impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.text.hash(state)
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

/// The text every key of `namespace` starts with: the escaped namespace and
/// `:` (empty without a namespace), as [`KeyWriter::finish`] writes it.
pub(crate) fn namespace_prefix(namespace: &str) -> String {
    if namespace.is_empty() {
        return String::new();
    }
    let mut p = String::with_capacity(namespace.len() + 1);
    escape::escape_into(&mut p, namespace);
    p.push(':');
    p
}

/// The scene of a rendered `key` that starts with `prefix` (from
/// [`namespace_prefix`]): the text up to the next `:`, which escaping keeps
/// out of a scene. `None` for a key of another namespace.
pub(crate) fn scene_after<'k>(key: &'k str, prefix: &str) -> Option<&'k str> {
    let rest = key.strip_prefix(prefix)?;
    Some(rest.split(':').next().unwrap_or(rest))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests;
