//! Axum handlers: which return types are stored as responses. A handler
//! returning `Result<Json<T>, E>`, `Result<(StatusCode, Json<T>), E>` or
//! `Result<StoredResponse, E>` is expanded through `__private::Http<R>`, which
//! stores `T` (and the status) under the keeping rule; a `Json` `Ok` type is
//! wrapped in `idem::http::Replied` in the emitted signature so replays carry
//! `Idempotent-Replayed: true`. `impl IntoResponse` cannot be named in the
//! expansion, so it is refused with the adapter to use instead
//! (`idem::http::StoredResponse`).

use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{GenericArgument, PathArguments, ReturnType, Signature, Type};

use crate::common::errors::Errors;

/// True when the `Ok` type of the declared return type (the first type
/// argument of `Result<..>` or of an alias `Result<T>`) is an axum response
/// the attribute stores: [`is_json_reply`], or spelled `StoredResponse`.
pub(super) fn is_axum_reply(ret: &Type) -> bool {
    is_json_reply(ret) || ok_type(ret).is_some_and(|ok| is_named(ok, "StoredResponse", false))
}

/// True when the `Ok` type is spelled `Json<..>` or a tuple ending in
/// `Json<..>`: a response that cannot carry the replay header itself.
pub(super) fn is_json_reply(ret: &Type) -> bool {
    ok_type(ret).is_some_and(|ok| match ok {
        Type::Tuple(t) => t.elems.last().is_some_and(is_json),
        other => is_json(other),
    })
}

/// `sig` with its `Ok` type `T` emitted as `krate::http::Replied<T>`:
/// `Result<Json<O>, E>` → `Result<Replied<Json<O>>, E>` (an alias's first
/// argument likewise), still an axum response.
pub(super) fn marked_signature(sig: &Signature, krate: &TokenStream) -> Signature {
    let mut sig = sig.clone();
    if let ReturnType::Type(_, ty) = &mut sig.output
        && let Some(ok) = ok_type_mut(ty)
    {
        let inner = ok.clone();
        *ok = syn::parse_quote_spanned!(inner.span()=> #krate::http::Replied<#inner>);
    }
    sig
}

fn ok_type(ret: &Type) -> Option<&Type> {
    let Type::Path(p) = ret else { return None };
    let PathArguments::AngleBracketed(args) = &p.path.segments.last()?.arguments else {
        return None;
    };
    args.args.iter().find_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

fn ok_type_mut(ret: &mut Type) -> Option<&mut Type> {
    let Type::Path(p) = ret else { return None };
    let PathArguments::AngleBracketed(args) = &mut p.path.segments.last_mut()?.arguments else {
        return None;
    };
    args.args.iter_mut().find_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

/// A path type whose last segment is `name` (with type arguments when `args`).
fn is_named(ty: &Type, name: &str, args: bool) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|s| {
            s.ident == name && (!args || matches!(s.arguments, PathArguments::AngleBracketed(_)))
        }),
        Type::Group(g) => is_named(&g.elem, name, args),
        Type::Paren(p) => is_named(&p.elem, name, args),
        _ => false,
    }
}

fn is_json(ty: &Type) -> bool {
    is_named(ty, "Json", true)
}

/// Records an error at an `impl Trait` return type (an axum handler's
/// `impl IntoResponse`), naming the adapter; true when it did.
pub(super) fn refuse_impl_trait(sig: &Signature, errors: &mut Errors) -> bool {
    let ReturnType::Type(_, ty) = &sig.output else {
        return false;
    };
    let Type::ImplTrait(t) = &**ty else {
        return false;
    };
    let span: Span = t.span();
    errors.at(
        span,
        "`#[idempotent]` cannot store an `impl Trait` result, whose type it cannot name; \
         an axum handler returns `Result<Json<T>, E>`, `Result<(StatusCode, Json<T>), E>`, \
         or `Result<idem::http::StoredResponse, E>` built with `StoredResponse::capture(response).await?`",
    );
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn reply(ty: &str) -> bool {
        is_axum_reply(&syn::parse_str(ty).unwrap())
    }

    #[test]
    fn recognises_axum_replies_by_name() {
        assert!(reply("Result<Json<Order>, AppError>"));
        assert!(reply("Result<axum::Json<Order>, AppError>"));
        assert!(reply("Result<(StatusCode, Json<Order>), AppError>"));
        assert!(reply("AppResult<Json<Order>>"));
        assert!(!reply("Result<Order, AppError>"));
        assert!(!reply("Result<Json, AppError>"));
        assert!(!reply("Result<(Json<Order>, u8), AppError>"));
        assert!(reply("Result<idem::http::StoredResponse, AppError>"));
        assert!(!is_json_reply(
            &syn::parse_str("Result<StoredResponse, E>").unwrap()
        ));
    }

    #[test]
    fn json_ok_types_are_emitted_as_replied() {
        let sig: Signature =
            syn::parse_str("async fn f() -> AppResult<(StatusCode, Json<Order>)>").unwrap();
        let out = marked_signature(&sig, &quote!(::idem));
        let ReturnType::Type(_, ty) = &out.output else {
            panic!("a return type")
        };
        let text = quote!(#ty).to_string().replace(' ', "");
        assert_eq!(
            text,
            "AppResult<::idem::http::Replied<(StatusCode,Json<Order>)>>"
        );
    }
}
