//! A handle's namespace, escaped once when the handle is built.
//!
//! Every key a handle renders starts with the escaped namespace, and every key
//! handed to the non-macro API is checked against it. Both used to escape the
//! raw namespace (or scan it to find it needs none) on every call (in a
//! memory-store profile, namespace check and escaping 4 % of a duplicate).

use super::writer::escaped;

/// The namespace as configured and as keys carry it.
#[derive(Debug)]
pub(crate) struct Namespace {
    raw: Box<str>,
    /// Escaped like a part: what keys start with, before their `:`.
    escaped: Box<str>,
}

impl Namespace {
    pub(crate) fn new(raw: &str) -> Self {
        Namespace {
            escaped: escaped(raw).into(),
            raw: raw.into(),
        }
    }

    /// As configured (`IdemBuilder::namespace`).
    pub(crate) fn raw(&self) -> &str {
        &self.raw
    }

    /// As written at the front of keys.
    pub(crate) fn escaped(&self) -> &str {
        &self.escaped
    }
}
