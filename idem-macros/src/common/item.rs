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
