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
    let t = match &**ty {
        Type::ImplTrait(t) => t,
        // `Result<impl IntoResponse, E>`: the same, at the `Ok` type.
        ret => match ok_type(ret) {
            Some(Type::ImplTrait(t)) => t,
            _ => return false,
        },
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

/// Records an error at an axum `Response` as the `Ok` type (`Result<Response,
/// E>`): its body is a stream, which cannot be stored as it is; true when it did.
pub(super) fn refuse_response(ret: &Type, errors: &mut Errors) -> bool {
    let Some(ok) = ok_type(ret).filter(|ok| is_named(ok, "Response", false)) else {
        return false;
    };
    errors.at(
        ok.span(),
        "`#[idempotent]` cannot store a `Response`: its body is a stream, not a value it can \
         serialize; return `Result<idem::http::StoredResponse, E>` and build it with \
         `StoredResponse::capture(response).await?` (status, chosen headers and body are \
         stored), or return `Result<Json<T>, E>`",
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
    fn impl_trait_and_response_ok_types_are_refused_with_the_adapter() {
        for (src, refused) in [
            ("async fn f() -> impl IntoResponse", true),
            ("async fn f() -> Result<impl IntoResponse, E>", true),
            ("async fn f() -> Result<Json<O>, E>", false),
        ] {
            let mut errors = Errors::default();
            let sig: Signature = syn::parse_str(src).unwrap();
            assert_eq!(refuse_impl_trait(&sig, &mut errors), refused, "{src}");
        }
        for (ty, refused) in [
            ("Result<Response, E>", true),
            ("Result<axum::response::Response<Body>, E>", true),
            ("Result<StoredResponse, E>", false),
            ("Result<Order, E>", false),
        ] {
            let mut errors = Errors::default();
            let ret: Type = syn::parse_str(ty).unwrap();
            assert_eq!(refuse_response(&ret, &mut errors), refused, "{ty}");
            if refused {
                let e = errors.into_compile_errors().to_string();
                assert!(
                    e.contains("StoredResponse::capture(response).await?"),
                    "{e}"
                );
            }
        }
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
