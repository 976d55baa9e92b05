//! The function's parameters as an attribute sees them: the names a key
//! template or an option may refer to (with did-you-mean on a typo), `self`
//! receivers (`<self.tenant>`) and the one `idem::Fence` parameter. A
//! pattern's bound identifiers are names too: an axum handler's
//! `Json(req): Json<CreateOrder>` lets a template say `<req.order_no>`, and
//! `on_conflict` receives `&req`.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, Pat, Type};

use crate::common::errors::{Errors, one_of, suggestion};
use crate::common::item::ItemFn;

/// A parameter a template or option can name.
#[derive(Debug)]
pub(crate) struct Named {
    pub(crate) ident: Ident,
    /// Where rustc should report a problem with its type: the named part of the
    /// type (`Cmd` in `&Cmd`), since stable proc macros cannot span a whole type.
    pub(crate) anchor: Span,
}

/// The parameters of one annotated function.
#[derive(Debug)]
pub(crate) struct Params {
    named: Vec<Named>,
    /// The `idem::Fence` parameter and whether it was declared `mut`.
    pub(crate) fence: Option<(Ident, bool)>,
}

impl Params {
    /// Sorts the parameters of `item`; a second `Fence` parameter is recorded.
    pub(crate) fn of(item: &ItemFn, errors: &mut Errors) -> Params {
        let mut params = Params {
            named: Vec::new(),
            fence: None,
        };
        for arg in &item.sig.inputs {
            let (ident, mutable, ty) = match arg {
                FnArg::Receiver(r) => (
                    Some(Ident::from(r.self_token)),
                    r.mutability.is_some(),
                    &*r.ty,
                ),
                FnArg::Typed(t) => match &*t.pat {
                    Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() => {
                        (Some(p.ident.clone()), p.mutability.is_some(), &*t.ty)
                    }
                    pat => {
                        let mut bound = Vec::new();
                        bindings(pat, &mut bound);
                        params.named.extend(bound.into_iter().map(|ident| Named {
                            anchor: ident.span(),
                            ident,
                        }));
                        (None, false, &*t.ty)
                    }
                },
            };
            match ident {
                Some(id) if is_fence(ty) && id != "self" => {
                    if let Some((first, _)) = &params.fence {
                        errors.at(
                            id.span(),
                            format!("only one `idem::Fence` parameter is allowed; `{first}` already receives the fence"),
                        );
                    } else {
                        params.fence = Some((id, mutable));
                    }
                }
                Some(ident) => params.named.push(Named {
                    ident,
                    anchor: type_anchor(ty),
                }),
                None => {}
            }
        }
        params
    }

    /// The named parameter `name` (raw identifiers match their plain text).
    pub(crate) fn get(&self, name: &str) -> Option<&Named> {
        self.named.iter().find(|n| n.ident.unraw() == name)
    }

    /// Is `name` the fence parameter?
    pub(crate) fn is_fence(&self, name: &str) -> bool {
        self.fence.as_ref().is_some_and(|(f, _)| f.unraw() == name)
    }

    /// The named parameters (not the fence), in declaration order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &Ident> {
        self.named.iter().map(|n| &n.ident)
    }

    /// "unknown parameter `usr_id` in {what}; did you mean `user_id`?", or the
    /// list of parameters when none is close.
    pub(crate) fn unknown(&self, name: &str, what: &str) -> String {
        let known: Vec<String> = self
            .named
            .iter()
            .map(|n| n.ident.unraw().to_string())
            .collect();
        let known: Vec<&str> = known.iter().map(String::as_str).collect();
        let hint = match suggestion(name, known.iter().copied()) {
            s if !s.is_empty() => s,
            _ if known.is_empty() => "; the function has no parameters".to_owned(),
            _ => format!("; the parameters are {}", one_of(&known)),
        };
        format!("unknown parameter `{name}` in {what}{hint}")
    }
}

/// The identifiers a pattern binds (`req` in `Json(req)`, `a` and `b` in
/// `Pair { a, b: (b, _) }`), in order. Identifiers that are constants or unit
/// structs in other positions (`None`) cannot be told apart without types; a
/// template naming one would not compile in the expansion either.
fn bindings(pat: &Pat, out: &mut Vec<Ident>) {
    match pat {
        Pat::Ident(p) => {
            out.push(p.ident.clone());
            if let Some((_, sub)) = &p.subpat {
                bindings(sub, out);
            }
        }
        Pat::TupleStruct(p) => p.elems.iter().for_each(|e| bindings(e, out)),
        Pat::Tuple(p) => p.elems.iter().for_each(|e| bindings(e, out)),
        Pat::Slice(p) => p.elems.iter().for_each(|e| bindings(e, out)),
        Pat::Struct(p) => p.fields.iter().for_each(|f| bindings(&f.pat, out)),
        Pat::Reference(p) => bindings(&p.pat, out),
        Pat::Paren(p) => bindings(&p.pat, out),
        Pat::Type(p) => bindings(&p.pat, out),
        Pat::Or(p) => {
            if let Some(first) = p.cases.first() {
                bindings(first, out);
            }
        }
        _ => {}
    }
}

/// Is this type written as a path ending in `Fence` (`idem::Fence`, `Fence`)?
fn is_fence(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Fence" && s.arguments.is_none()),
        Type::Group(g) => is_fence(&g.elem),
        _ => false,
    }
}

/// The named part of a type (`Cmd` in `&Cmd`), where its problems are reported.
fn type_anchor(ty: &Type) -> Span {
    match ty {
        Type::Reference(r) => type_anchor(&r.elem),
        Type::Paren(p) => type_anchor(&p.elem),
        Type::Group(g) => type_anchor(&g.elem),
        Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .map_or_else(|| ty.span(), |s| s.ident.span()),
        _ => ty.span(),
    }
}

/// The transaction parameter of a macro that writes in the caller's
/// transaction (`#[state_transition]`, `#[consume_once]`): `tx = name`, else a
/// parameter called `tx`; `at` is where a missing one is reported.
pub(crate) fn transaction(
    table: &crate::common::args::Table,
    opt: Option<crate::common::args::Opt<Ident>>,
    params: &Params,
    at: Span,
    errors: &mut Errors,
) -> Option<Ident> {
    match opt {
        Some(o) if params.get(&o.value.to_string()).is_some() => Some(o.value),
        Some(o) => {
            let msg = params.unknown(&o.value.to_string(), "`tx`");
            errors.at(o.value.span(), msg);
            None
        }
        None => match params.names().find(|n| *n == "tx") {
            Some(tx) => Some(tx.clone()),
            None => {
                errors.at(
                    at,
                    format!(
                        "{} runs in the caller's transaction: add a parameter `tx: &mut sqlx::Transaction<'_, DB>` (or a connection), or name yours with `tx = ...`",
                        table.attr()
                    ),
                );
                None
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_bindings_are_names() {
        let item: ItemFn = syn::parse_str(
            "async fn h(State(app): State<App>, Json(req): Json<Cmd>, \
             Pair { a, b: (b, _) }: Pair, id: u64) -> R { }",
        )
        .unwrap();
        let mut errors = Errors::default();
        let params = Params::of(&item, &mut errors);
        let names: Vec<String> = params.names().map(ToString::to_string).collect();
        assert_eq!(names, ["app", "req", "a", "b", "id"]);
        assert!(errors.is_empty());
        assert!(
            params
                .unknown("rq", "key template")
                .contains("did you mean `req`?")
        );
    }
}
