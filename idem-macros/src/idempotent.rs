//! The `#[idempotent]` pipeline: parse → validate → expand. On any error the
//! original function is emitted unchanged beside the `compile_error!`s, so its
//! callers and rust-analyzer keep working (tokio #4162, thiserror's fallback).

use proc_macro2::TokenStream;

use crate::errors::Errors;
use crate::item::ItemFn;
use crate::{args, codegen, validate};

/// Expands `#[idempotent(args)] item`.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = args::parse(args, &mut errors);
    let parsed: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            errors.at(
                e.span(),
                format!("`#[idempotent]` applies to an `async fn`: {e}"),
            );
            return fallback(errors, item);
        }
    };
    match validate::validate(args, &parsed, &mut errors) {
        Some(plan) if errors.is_empty() => codegen::expand(&plan),
        _ => fallback(errors, item),
    }
}

fn fallback(errors: Errors, item: TokenStream) -> TokenStream {
    let mut out = errors.into_compile_errors();
    out.extend(item);
    out
}
