//! `token = "<param>"` (or `"<param.field>"`): the parameter carrying a one-time
//! token. One placeholder and nothing else; the parameter must exist and may
//! not be the fence.

use syn::LitStr;

use crate::common::errors::Errors;
use crate::common::key::KeyPiece;
use crate::common::params::Params;

/// Checks the option; `None` (recorded) when it is malformed or names no parameter.
pub(crate) fn resolve(lit: &LitStr, params: &Params, errors: &mut Errors) -> Option<KeyPiece> {
    let text = lit.value();
    let inner = text.strip_prefix('<').and_then(|t| t.strip_suffix('>'));
    let path: Option<Vec<&str>> = inner.map(|t| t.split('.').collect());
    let valid = path.as_ref().is_some_and(|p| {
        p.iter().all(|s| {
            !s.is_empty()
                && s.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !s.starts_with(|c: char| c.is_ascii_digit() && p[0] == *s)
        })
    });
    let Some(path) = path.filter(|_| valid) else {
        errors.at(
            lit.span(),
            format!("`token` must be one placeholder naming the parameter that carries the token, e.g. `token = \"<token>\"`, not `{text}`"),
        );
        return None;
    };
    let root = path[0];
    if params.is_fence(root) {
        errors.at(
            lit.span(),
            format!("the fence parameter `{root}` cannot carry the token"),
        );
        return None;
    }
    let Some(named) = params.get(root) else {
        errors.at(lit.span(), params.unknown(root, "`token`"));
        return None;
    };
    Some(KeyPiece::Arg {
        ident: named.ident.clone(),
        fields: path[1..].iter().map(|s| (*s).to_owned()).collect(),
        at: named.anchor,
    })
}
