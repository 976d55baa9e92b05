//! Axum handlers: which return types are stored as responses. A handler
//! returning `Result<Json<T>, E>` or `Result<(StatusCode, Json<T>), E>` is
//! expanded through `__private::Http<R>`, which stores `T` (and the status);
//! `impl IntoResponse` cannot be named in the expansion, so it is refused with
//! the adapter to use instead (`idem::http::StoredResponse`).

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{GenericArgument, PathArguments, ReturnType, Signature, Type};

use crate::common::errors::Errors;

/// True when the `Ok` type of the declared return type (the first type
/// argument of `Result<..>` or of an alias `Result<T>`) is spelled `Json<..>`
/// or a tuple ending in `Json<..>`.
pub(super) fn is_axum_reply(ret: &Type) -> bool {
    ok_type(ret).is_some_and(|ok| match ok {
        Type::Tuple(t) => t.elems.last().is_some_and(is_json),
        other => is_json(other),
    })
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

fn is_json(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|s| {
            s.ident == "Json" && matches!(s.arguments, PathArguments::AngleBracketed(_))
        }),
        Type::Group(g) => is_json(&g.elem),
        Type::Paren(p) => is_json(&p.elem),
        _ => false,
    }
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
        assert!(!reply("Result<idem::http::StoredResponse, AppError>"));
    }
}
