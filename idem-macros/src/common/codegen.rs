//! Expansion pieces every macro shares: the `KeyBuf` chain for a key template,
//! the fake-return line, the fence binding, literal durations, and the original
//! function beside the `compile_error!`s when anything is wrong.

use std::time::Duration;

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::{Ident, Path, Type};

use crate::common::errors::Errors;
use crate::common::key::KeyPiece;

/// Errors + the item as written → `compile_error!(..)* item`: callers and
/// rust-analyzer keep working (tokio #4162, thiserror's fallback).
pub(crate) fn fallback(errors: Errors, item: TokenStream) -> TokenStream {
    let mut out = errors.into_compile_errors();
    out.extend(item);
    out
}

/// `crate = "path"` or nothing → the tokens naming the `idem` crate.
pub(crate) fn krate(path: Option<&Path>) -> TokenStream {
    match path {
        Some(p) => p.into_token_stream(),
        None => quote!(::idem),
    }
}

/// Template pieces → `KeyBuf::<start>.lit("a:").arg(&p)...finish()`, where
/// `start` is the constructor call (`new(&SPEC)`, `for_lock(&LOCK)`).
pub(crate) fn key_chain(
    krate: &TokenStream,
    start: TokenStream,
    pieces: &[KeyPiece],
) -> TokenStream {
    let pieces = pieces.iter().map(|piece| match piece {
        KeyPiece::Lit(s) => quote!(.lit(#s)),
        KeyPiece::Arg { .. } => {
            let (at, path) = arg_path(piece);
            quote_spanned!(at=> .arg(&#path))
        }
    });
    quote! {
        #krate::__private::KeyBuf::#start
            #(#pieces)*
            .finish()
    }
}

/// A parameter piece → (its span, `param.field.field`), placed in the user's
/// signature and resolved like the parameter: a type that does not fit is
/// reported at the parameter's type, a missing field at the parameter. Field
/// names get the macro's own hygiene so rustc offers no edit of the signature.
pub(crate) fn arg_path(piece: &KeyPiece) -> (Span, TokenStream) {
    let KeyPiece::Arg { ident, fields, at } = piece else {
        return (Span::call_site(), TokenStream::new());
    };
    let at = if fields.is_empty() { *at } else { ident.span() };
    let mut ident = ident.clone();
    ident.set_span(ident.span().located_at(at));
    let fields = fields
        .iter()
        .map(|f| field(f, Span::call_site().located_at(at)));
    (at, quote_spanned!(at=> #ident #(.#fields)*))
}

/// `R` → `if let Some(__idem_ret) = None::<R> { return __idem_ret; }`: pins the
/// async block's output type so `?` and `return` infer from the signature
/// (tracing and async-trait do the same).
pub(crate) fn fake_return(ret: &Type) -> TokenStream {
    quote! {
        if let ::core::option::Option::Some(__idem_ret) = ::core::option::Option::None::<#ret> {
            return __idem_ret;
        }
    }
}

/// The `idem::Fence` parameter → (`let __idem_fence = FenceCell::new();`, the
/// line in the body that hands the claim's fence to the parameter). A `mut`
/// parameter is assigned (so its `mut` is used), else shadowed.
pub(crate) fn fence_binding(
    krate: &TokenStream,
    fence: &Ident,
    mutable: bool,
) -> (TokenStream, TokenStream) {
    let cell = quote!(let __idem_fence = #krate::__private::FenceCell::new(););
    let take = if mutable {
        quote!(#fence = __idem_fence.take(#fence);)
    } else {
        quote!(let #fence = __idem_fence.take(#fence);)
    };
    (cell, take)
}

fn field(name: &str, at: Span) -> TokenStream {
    match name.parse::<u32>() {
        Ok(i) => syn::Index { index: i, span: at }.into_token_stream(),
        Err(_) => syn::Ident::new(name, at).into_token_stream(),
    }
}

/// A duration → `Duration::from_secs(86_400)` (or `from_millis`), as a reader
/// would write it.
pub(crate) fn duration(d: Duration) -> TokenStream {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        let secs = syn::LitInt::new(&grouped(ms / 1000), Span::call_site());
        quote!(::core::time::Duration::from_secs(#secs))
    } else {
        let ms = syn::LitInt::new(&grouped(ms), Span::call_site());
        quote!(::core::time::Duration::from_millis(#ms))
    }
}

/// `86400` → `86_400`.
fn grouped(n: u128) -> String {
    let digits = n.to_string();
    if digits.len() <= 4 {
        return digits;
    }
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('_');
        }
        out.push(c);
    }
    out
}

/// `v` → `::core::option::Option::Some(v)`.
pub(crate) fn some(v: impl ToTokens) -> TokenStream {
    quote!(::core::option::Option::Some(#v))
}

/// The literal durations a spec writes, each only when the attribute wrote it:
/// `lease: Some(Duration::..),`. Every macro's spec lists its duration options
/// through here; unwritten ones stay `None` (the handle's settings decide).
pub(crate) fn duration_fields(fixed: &[(&str, Duration)]) -> TokenStream {
    let mut fields = TokenStream::new();
    for (name, d) in fixed {
        let (name, d) = (Ident::new(name, Span::call_site()), some(duration(*d)));
        fields.extend(quote!(#name: #d,));
    }
    fields
}

/// The durations written as expressions → `.ttl(expr).wait(expr)`, hooks on
/// the call evaluated each time it runs. Spanned at the expression: rustc
/// reports a value that is not a `Duration` there.
pub(crate) fn duration_hooks(dynamic: &[(&str, syn::Expr)]) -> TokenStream {
    let mut hooks = TokenStream::new();
    for (name, e) in dynamic {
        let at = syn::spanned::Spanned::span(e);
        let name = Ident::new(name, at);
        // Through a typed `let`: a value that is not a `Duration` is a plain
        // mismatch at the expression, with no "method defined here" in idem.
        hooks.extend(quote_spanned!(at=> .#name({
            let __idem_d: ::core::time::Duration = #e;
            __idem_d
        })));
    }
    hooks
}

/// `handle = expr` → `.handle(..)` through a typed `let`, so an expression that
/// is not an `&Idem` is a plain mismatch at it (no "method defined here" in idem).
pub(crate) fn handle_hook(krate: &TokenStream, h: &syn::Expr) -> TokenStream {
    let at = syn::spanned::Spanned::span(h);
    quote_spanned!(at=> .handle({
        let __idem_h: &#krate::Idem = #h;
        __idem_h
    }))
}
