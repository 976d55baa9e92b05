//! The annotated function: signature parsed with `syn`, body kept as opaque
//! tokens (tracing's `MaybeItemFn`), so half-typed bodies still expand and the
//! body is re-emitted token for token. Also the checks every macro makes of the
//! signature (`async`, a `Result`-like return type), worded for the macro.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Attribute, ReturnType, Signature, Type, Visibility};

use crate::common::args::Table;
use crate::common::errors::Errors;

/// An `fn` item with an unparsed body.
pub(crate) struct ItemFn {
    pub(crate) outer_attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    pub(crate) inner_attrs: Vec<Attribute>,
    pub(crate) body: TokenStream,
    pub(crate) brace_span: Span,
}

impl Parse for ItemFn {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let outer_attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let sig = input.parse()?;
        let content;
        let brace = syn::braced!(content in input);
        let inner_attrs = content.call(Attribute::parse_inner)?;
        let body = content.parse()?;
        Ok(ItemFn {
            outer_attrs,
            vis,
            sig,
            inner_attrs,
            body,
            brace_span: brace.span.join(),
        })
    }
}

impl ItemFn {
    /// The function for the fallback beside the `compile_error!`s: `item` as
    /// written, but made `async` when it was not (as `#[tokio::main]` does), so
    /// callers that `.await` it, and axum's `Handler` bound, add no error of
    /// their own to the one at the `fn` token.
    pub(crate) fn fallback_tokens(&self, item: TokenStream) -> TokenStream {
        if self.sig.asyncness.is_some() {
            return item;
        }
        let mut sig = self.sig.clone();
        sig.asyncness = Some(syn::Token![async](self.sig.fn_token.span));
        let (outer, vis, inner, body) =
            (&self.outer_attrs, &self.vis, &self.inner_attrs, &self.body);
        let mut block = proc_macro2::Group::new(
            proc_macro2::Delimiter::Brace,
            quote::quote!(#(#inner)* #body),
        );
        block.set_span(self.brace_span);
        quote::quote!(#(#outer)* #vis #sig #block)
    }
}

/// Parses the annotated item; `None` (recorded) when it is not a function.
pub(crate) fn parse(table: &Table, item: TokenStream, errors: &mut Errors) -> Option<ItemFn> {
    syn::parse2(item)
        .map_err(|e| {
            errors.at(
                e.span(),
                format!("{} applies to an `async fn`: {e}", table.attr()),
            )
        })
        .ok()
}

/// Records an error at the `fn` token unless the function is `async`.
pub(crate) fn require_async(table: &Table, sig: &Signature, errors: &mut Errors) {
    if sig.asyncness.is_none() {
        errors.at(
            sig.fn_token.span,
            format!(
                "{} requires an `async fn`; add `async` before `fn`",
                table.attr()
            ),
        );
    }
}

/// The declared return type, if it can be a `Result`. Types that plainly are not
/// are reported here with `hint` (what the macro needs); aliases
/// (`io::Result<T>`, `type Res<T> = ...`) are left to rustc and the runtime's
/// bounds.
pub(crate) fn result_type<'a>(
    sig: &'a Signature,
    hint: &str,
    errors: &mut Errors,
) -> Option<&'a Type> {
    const NOT_RESULT: &[&str] = &[
        "Option", "Vec", "String", "Box", "bool", "char", "str", "u8", "u16", "u32", "u64", "u128",
        "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64",
    ];
    let name = &sig.ident;
    match &sig.output {
        ReturnType::Default => {
            errors.at(name.span(), format!("`{name}` returns `()`; {hint}"));
            None
        }
        ReturnType::Type(_, ty) => {
            let plain = match &**ty {
                Type::Path(p) if p.qself.is_none() => p
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| !NOT_RESULT.contains(&s.ident.to_string().as_str())),
                Type::Group(_) | Type::Paren(_) => true,
                _ => false,
            };
            if plain {
                Some(ty)
            } else {
                let shown = ty.to_token_stream().to_string();
                errors.at(
                    ty.span(),
                    format!("return type `{shown}` is not a `Result`; {hint}"),
                );
                None
            }
        }
    }
}

/// `-> Order`, a return type written as a plain name without type arguments
/// that does not end in `Result`: the `Result` was forgotten. One error at
/// the type naming what to write (rustc would report the runtime's bounds at
/// three places of the expansion); true when it recorded one. An alias of
/// `Result` without type arguments is accepted when named `…Result`.
pub(crate) fn forgotten_result(sig: &Signature, hint: &str, errors: &mut Errors) -> bool {
    let ReturnType::Type(_, ty) = &sig.output else {
        return false;
    };
    let Type::Path(p) = &**ty else { return false };
    let Some(last) = p.path.segments.last() else {
        return false;
    };
    if p.qself.is_some()
        || !matches!(last.arguments, syn::PathArguments::None)
        || last.ident.to_string().ends_with("Result")
    {
        return false;
    }
    let shown = shown(ty);
    errors.at(
        ty.span(),
        format!(
            "return type `{shown}` is not a `Result`; {hint}: write `Result<{shown}, E>` with your \
             error type (an alias of `Result` without type arguments is accepted when its name \
             ends in `Result`)"
        ),
    );
    true
}

/// For attributes whose signature wraps the body's value (`#[state_transition]`:
/// `Transition`, `#[consume_once]`: `Consumed`): the declared return type when
/// it can be `Result<wrapper<T>, E>`. A `Result<X, E>` written with another `X`
/// is one error at `X` showing the signature to write (otherwise rustc reports
/// the runtime's bounds at three places of the expansion); aliases are left to
/// rustc.
pub(crate) fn wrapped_result_type<'a>(
    table: &Table,
    sig: &'a Signature,
    wrapper: &str,
    errors: &mut Errors,
) -> Option<&'a Type> {
    let hint = format!(
        "{} functions return `Result<idem::{wrapper}<T>, E>`",
        table.attr()
    );
    let ret = result_type(sig, &hint, errors)?;
    let Type::Path(p) = ret else { return Some(ret) };
    let Some(last) = p.path.segments.last() else {
        return Some(ret);
    };
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return Some(ret);
    };
    let mut types = args.args.iter().filter_map(|a| match a {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    let (Some(ok), err) = (types.next(), types.next()) else {
        return Some(ret);
    };
    if last.ident != "Result" || is_wrapper(ok, wrapper) {
        return Some(ret);
    }
    let ok_shown = shown(ok);
    let write = match err {
        Some(e) => format!("Result<idem::{wrapper}<{ok_shown}>, {}>", shown(e)),
        None => format!("Result<idem::{wrapper}<{ok_shown}>>"),
    };
    errors.at(
        ok.span(),
        format!(
            "{hint}, not `{}`; the body returns `Result<T, E>` and the macro wraps its value: write `{write}`",
            shown(ret)
        ),
    );
    None
}

/// A type as the user wrote it (`Result<(), AppError>`), not as tokens print
/// (`Result < () , AppError >`).
fn shown(ty: &Type) -> String {
    let mut s = ty.to_token_stream().to_string();
    for (from, to) in [
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" ,", ","),
        ("( ", "("),
        (" )", ")"),
        ("& ", "&"),
        (" ::", "::"),
        (":: ", "::"),
    ] {
        s = s.replace(from, to);
    }
    s
}

/// `idem::Transition<..>`, `Transition<..>`: the last segment names `wrapper`.
fn is_wrapper(ty: &Type, wrapper: &str) -> bool {
    match ty {
        Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == wrapper),
        Type::Group(g) => is_wrapper(&g.elem, wrapper),
        Type::Paren(p) => is_wrapper(&p.elem, wrapper),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::args::Table;

    const T: Table = Table {
        name: "demo",
        options: &[],
    };

    fn item(src: &str) -> ItemFn {
        syn::parse_str(src).unwrap()
    }

    #[test]
    fn the_fallback_is_async() {
        let f = item("#[doc = \"d\"] pub fn f(a: u8) -> Result<u8, E> { #![allow(x)] Ok(a) }");
        let out = f.fallback_tokens(TokenStream::new()).to_string();
        assert!(out.contains("pub async fn f (a : u8)"), "{out}");
        assert!(out.contains("# ! [allow (x)] Ok (a)"), "{out}");
        let raw: TokenStream = "async fn g() {}".parse().unwrap();
        let g = item("async fn g() {}");
        assert_eq!(g.fallback_tokens(raw.clone()).to_string(), raw.to_string());
    }

    #[test]
    fn a_forgotten_result_is_one_error_naming_what_to_write() {
        let mut errors = Errors::default();
        let f = item("async fn f() -> Order { body() }");
        assert!(forgotten_result(&f.sig, "hint", &mut errors));
        let e = errors.into_compile_errors().to_string();
        assert!(e.contains("write `Result<Order, E>`"), "{e}");
        for ok in [
            "async fn f() -> Result<Order, E> { body() }",
            "async fn f() -> AppResult { body() }",
            "async fn f() -> io::Result<u8> { body() }",
            "async fn f() -> Res<u8> { body() }",
            "async fn f() { }",
        ] {
            let mut errors = Errors::default();
            assert!(
                !forgotten_result(&item(ok).sig, "hint", &mut errors),
                "{ok}"
            );
            assert!(errors.is_empty(), "{ok}");
        }
    }

    #[test]
    fn a_wrapped_result_names_the_signature_to_write() {
        let mut errors = Errors::default();
        let f = item("async fn f() -> Result<u32, AppError> { Ok(1) }");
        assert!(wrapped_result_type(&T, &f.sig, "Transition", &mut errors).is_none());
        let e = errors.into_compile_errors().to_string();
        assert!(
            e.contains("write `Result<idem::Transition<u32>, AppError>`"),
            "{e}"
        );
        for ok in [
            "async fn f() -> Result<idem::Transition<u32>, AppError> { Ok(1) }",
            "async fn f() -> Result<Transition<()>> { Ok(()) }",
            "async fn f() -> Res<u32> { Ok(1) }",
        ] {
            let mut errors = Errors::default();
            let f = item(ok);
            assert!(wrapped_result_type(&T, &f.sig, "Transition", &mut errors).is_some());
            assert!(errors.is_empty(), "{ok}");
        }
    }
}
