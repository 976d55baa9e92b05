//! The one key builder: both the macro path (`KeyBuf`) and the non-macro path
//! (`Key::from_parts`, `Idem::guard`) write through a [`KeyWriter`].
//!
//! Template text and escaped parts go straight into one buffer; the namespace,
//! which the macro expansion only learns from the handle at `run`, is put in
//! front once in [`KeyWriter::finish`], where an over-long key is also hashed.
//! The non-macro path knows the namespace first and writes it first
//! ([`KeyWriter::in_namespace`]): no shift of the whole key, no regrowth.

use std::borrow::Cow;

use super::escape::{escape_into, is_plain};
use super::part::{KeyPart, PartWriter};
use super::{DIGEST_MARK, Key, MAX_KEY_LEN, hex};

/// Incremental key builder: scene, literal template text and escaped parts.
#[derive(Debug)]
pub(crate) struct KeyWriter {
    /// The key, without its namespace unless `ns_len` says it is written.
    text: String,
    /// End of the scene in `text`, once known.
    scene_end: Option<usize>,
    /// Length of the namespace and its `:` at the front of `text`, once written.
    ns_len: Option<usize>,
}

impl KeyWriter {
    /// An empty key with room for `capacity` bytes.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        KeyWriter {
            text: String::with_capacity(capacity),
            scene_end: None,
            ns_len: None,
        }
    }

    /// An empty key under `namespace` (already escaped, written now), with room for
    /// `capacity` more bytes. For a scene written with [`scene`](Self::scene).
    pub(crate) fn in_namespace(namespace: &str, capacity: usize) -> Self {
        let mut text = String::with_capacity(namespace.len() + 1 + capacity);
        if !namespace.is_empty() {
            text.push_str(namespace);
            text.push(':');
        }
        KeyWriter {
            ns_len: Some(text.len()),
            text,
            scene_end: None,
        }
    }

    /// Appends template text verbatim. The macro validates it at compile time
    /// (no `%`, braces, whitespace or control characters), so it needs no escaping.
    pub(crate) fn literal(&mut self, s: &str) {
        self.text.push_str(s);
    }

    /// Writes a caller-chosen scene (the non-macro API), escaped like a part so
    /// that `("a:b", ["c"])` and `("a", ["b", "c"])` stay two keys.
    pub(crate) fn scene(&mut self, scene: &str) {
        escape_into(&mut self.text, scene);
        self.scene_end = Some(self.text.len());
    }

    /// Appends one escaped part. The first part ends a literal scene: the scene
    /// is the text before it without trailing `:`.
    pub(crate) fn part<P: KeyPart + ?Sized>(&mut self, part: &P) {
        if self.scene_end.is_none() {
            self.scene_end = Some(self.text.trim_end_matches(':').len());
        }
        part.write_part(&mut PartWriter::new(&mut self.text));
    }

    /// Puts the namespace (already escaped) in front and hashes the text after the scene
    /// if the key would be longer than [`MAX_KEY_LEN`]: `ns:scene:%#<40 hex>`.
    /// `%#` never occurs in an unhashed key (literals have no `%`, escaping writes
    /// `%` plus a hex digit, options write `%-`/`%+`), so a short value cannot
    /// forge a hashed key. A writer made [`in_namespace`](Self::in_namespace)
    /// has its namespace already: `namespace` must be that one.
    pub(crate) fn finish(mut self, namespace: &str) -> Key {
        let mut scene_end = self.scene_end.unwrap_or(self.text.len());
        if let Some(ns_len) = self.ns_len {
            debug_assert_eq!(
                self.text[..ns_len].strip_suffix(':').unwrap_or(""),
                namespace,
                "finished under another namespace than it was written in"
            );
            if self.text.len() > MAX_KEY_LEN {
                self.hash_parts(scene_end);
            }
            return Key::new(self.text, ns_len, scene_end);
        }
        let ns_len = if namespace.is_empty() {
            0
        } else {
            namespace.len() + 1
        };
        if ns_len + self.text.len() > MAX_KEY_LEN {
            self.hash_parts(scene_end);
        }
        if ns_len > 0 {
            self.text.insert(0, ':');
            self.text.insert_str(0, namespace);
            scene_end += ns_len;
        }
        Key::new(self.text, ns_len, scene_end)
    }

    /// Replaces the text after the scene (at `scene_end`) by its digest.
    fn hash_parts(&mut self, scene_end: usize) {
        let digest = blake3::hash(&self.text.as_bytes()[scene_end..]);
        self.text.truncate(scene_end);
        self.text.push(':');
        self.text.push_str(DIGEST_MARK);
        self.text.push_str(&hex(&digest.as_bytes()[..20]));
    }
}

/// The namespace as keys carry it: escaped like a part.
pub(super) fn escaped(namespace: &str) -> Cow<'_, str> {
    if is_plain(namespace) {
        Cow::Borrowed(namespace)
    } else {
        let mut esc = String::with_capacity(namespace.len() + 8);
        escape_into(&mut esc, namespace);
        Cow::Owned(esc)
    }
}
