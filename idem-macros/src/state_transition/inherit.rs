//! `#[idem::transitions(machine = .., table = .., key_column = .., tx = ..)]`
//! on an `impl` block: the card's bare `#[state_transition(from = "WAIT_PAY",
//! to = "PAY_SUCCESS")]` on its methods inherits those options.
//!
//! The mechanism: an attribute on the `impl` expands before the attributes of
//! its items, so it sees every method's `#[state_transition(..)]` (however the
//! path is written: `state_transition`, `idem::state_transition`), expands that
//! method itself with the shared options filled in, and removes the attribute.
//! A method's own option wins over the impl's. Methods without the attribute
//! are left alone.

use proc_macro2::TokenStream;
use quote::ToTokens;

use super::args::{self, SHARED};
use crate::common::errors::Errors;

/// Expands `#[transitions(args)] impl .. { .. }`.
pub(crate) fn expand_impl(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let shared = args::parse(&SHARED, args, &mut errors);
    let mut imp: syn::ItemImpl = match syn::parse2(item.clone()) {
        Ok(i) => i,
        Err(e) => {
            errors.at(e.span(), "`#[transitions]` applies to an `impl` block");
            return crate::common::codegen::fallback(errors, item);
        }
    };
    for it in &mut imp.items {
        let syn::ImplItem::Fn(f) = it else { continue };
        let Some(i) = f.attrs.iter().position(|a| {
            a.path()
                .segments
                .last()
                .is_some_and(|s| s.ident == "state_transition")
        }) else {
            continue;
        };
        let attr = f.attrs.remove(i);
        let own = match attr.meta {
            syn::Meta::List(l) => l.tokens,
            _ => TokenStream::new(),
        };
        let expanded = super::expand_with(own, Some(&shared), f.to_token_stream());
        *it = syn::ImplItem::Verbatim(expanded);
    }
    let mut out = errors.into_compile_errors();
    out.extend(imp.into_token_stream());
    out
}
