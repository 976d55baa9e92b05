//! A key option (`key = "..."` today; `#[distributed_lock(key = ..)]` and
//! `#[consume_once(msg_id = ..)]` next): the template grammar of `template.rs`
//! applied to this function's parameters, ready for the `KeyBuf` chain.

use proc_macro2::Span;
use syn::{Ident, LitStr};

use crate::common::errors::Errors;
use crate::common::params::Params;
use crate::common::template::{self, Segment};

/// One piece of the key, ready to render.
#[derive(Debug)]
pub(crate) enum KeyPiece {
    /// `.lit("...")`
    Lit(String),
    /// `.arg(&param.field)`: `param` resolves like the user's parameter, and the
    /// tokens point at the parameter's type, where rustc reports a missing field
    /// or a type that is not a key part.
    Arg {
        ident: Ident,
        fields: Vec<String>,
        at: Span,
    },
}

/// A validated key template.
#[derive(Debug, Default)]
pub(crate) struct Key {
    /// The template as written.
    pub(crate) template: String,
    /// Its literal scene prefix (before the first placeholder, without `:`).
    pub(crate) scene: String,
    pub(crate) pieces: Vec<KeyPiece>,
}

/// Checks the template in `lit` against `params`; every problem is recorded at
/// the literal, and `option` (e.g. `"key template"`) names it in messages.
pub(crate) fn resolve(lit: &LitStr, params: &Params, option: &str, errors: &mut Errors) -> Key {
    let text = lit.value();
    let (parsed, messages) = template::parse(&text);
    messages.into_iter().for_each(|m| errors.at(lit.span(), m));
    let mut pieces = Vec::new();
    for seg in &parsed.segments {
        let piece = match seg {
            Segment::Lit(s) => Ok(KeyPiece::Lit(s.clone())),
            Segment::Param { root, .. } if params.is_fence(root) => Err(format!(
                "the fence parameter `{root}` cannot be part of the key: it changes on every claim"
            )),
            Segment::Param { root, fields } => match params.get(root) {
                Some(named) => Ok(KeyPiece::Arg {
                    ident: named.ident.clone(),
                    fields: fields.clone(),
                    at: named.anchor,
                }),
                None => Err(params.unknown(root, option)),
            },
        };
        match piece {
            Ok(p) => pieces.push(p),
            Err(m) => errors.at(lit.span(), m),
        }
    }
    Key {
        scene: parsed.scene().to_owned(),
        template: text,
        pieces,
    }
}

/// A value option (`msg_id = "<msg.id>"`): one placeholder resolved against
/// `params` like a template's, or its problem recorded at the literal.
pub(crate) fn resolve_value(
    lit: &LitStr,
    params: &Params,
    option: &str,
    errors: &mut Errors,
) -> Option<KeyPiece> {
    let piece = match template::single_placeholder(&lit.value()) {
        Err(m) => Err(format!("`{option}`: {m}")),
        Ok(Segment::Param { root, .. }) if params.is_fence(&root) => Err(format!(
            "the fence parameter `{root}` cannot be `{option}`: it changes on every claim"
        )),
        Ok(Segment::Param { root, fields }) => match params.get(&root) {
            Some(named) => Ok(KeyPiece::Arg {
                ident: named.ident.clone(),
                fields,
                at: named.anchor,
            }),
            None => Err(params.unknown(&root, &format!("`{option}`"))),
        },
        Ok(Segment::Lit(_)) => Err(format!("`{option}` must be a placeholder")),
    };
    piece.map_err(|m| errors.at(lit.span(), m)).ok()
}
