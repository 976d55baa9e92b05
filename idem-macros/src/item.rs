//! The annotated function: signature parsed with `syn`, body kept as opaque
//! tokens (tracing's `MaybeItemFn`), so half-typed bodies still expand and the
//! body is re-emitted token for token.

use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, Pat, Signature, Type, Visibility};

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

/// One parameter as the key template and hooks see it.
pub(crate) struct Param<'a> {
    /// The binding name (`self` for a receiver), if the pattern is a plain name.
    pub(crate) ident: Option<Ident>,
    /// `mut` on the binding.
    pub(crate) mutable: bool,
    /// The declared type (for a receiver, `Self` with its reference).
    pub(crate) ty: &'a Type,
    /// The whole parameter, for spans.
    pub(crate) span: Span,
}

impl ItemFn {
    /// The parameters in declaration order.
    pub(crate) fn params(&self) -> Vec<Param<'_>> {
        self.sig
            .inputs
            .iter()
            .map(|arg| match arg {
                FnArg::Receiver(r) => Param {
                    ident: Some(Ident::from(r.self_token)),
                    mutable: r.mutability.is_some(),
                    ty: &r.ty,
                    span: r.self_token.span,
                },
                FnArg::Typed(t) => match &*t.pat {
                    Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() => Param {
                        ident: Some(p.ident.clone()),
                        mutable: p.mutability.is_some(),
                        ty: &t.ty,
                        span: t.span(),
                    },
                    _ => Param {
                        ident: None,
                        mutable: false,
                        ty: &t.ty,
                        span: t.span(),
                    },
                },
            })
            .collect()
    }
}

/// Is this type written as a path ending in `Fence` (`idem::Fence`, `Fence`)?
pub(crate) fn is_fence(ty: &Type) -> bool {
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
