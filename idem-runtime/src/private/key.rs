//! `KeyBuf`: the key chain of an expansion (`.lit(..).arg(..)`), written by the
//! same `KeyWriter` as `Key::from_parts`.

use super::Spec;
use crate::key::{Key, KeyPart, KeyWriter};

/// Renders the key from template pieces straight into one buffer
/// (`KeyWriter`, shared with `Key::from_parts`); the namespace is put in front
/// once the handle is known, at `run`.
#[derive(Debug)]
pub struct KeyBuf(KeyWriter);

impl KeyBuf {
    /// Starts a key for `spec`.
    pub fn new(spec: &'static Spec) -> Self {
        KeyBuf(KeyWriter::with_capacity(spec.template.len() + 32))
    }

    /// Starts a key for a `#[distributed_lock]` function.
    pub fn for_lock(spec: &'static super::LockSpec) -> Self {
        KeyBuf(KeyWriter::with_capacity(spec.template.len() + 32))
    }

    /// Appends literal template text.
    pub fn lit(mut self, s: &'static str) -> Self {
        self.0.literal(s);
        self
    }

    /// Appends one parameter, escaped.
    ///
    /// A `dyn` part, not a generic one: a parameter type that is not a key
    /// part is then an unmet cast at the parameter itself, and the message
    /// names no function inside idem (a generic bound would add "required by
    /// a bound in `KeyBuf::arg`").
    pub fn arg(mut self, part: &dyn KeyPart) -> Self {
        self.0.part(part);
        self
    }

    /// Ends the key.
    pub fn finish(self) -> KeyBuf {
        self
    }

    pub(crate) fn into_key(self, namespace: &crate::key::Namespace) -> Key {
        self.0.finish(namespace.escaped())
    }
}
