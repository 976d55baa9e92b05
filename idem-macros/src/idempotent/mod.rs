//! `#[idempotent]`: parse (`args.rs`, its option table) → validate
//! (`validate.rs`) → expand (`codegen.rs`). On any error the original function
//! is emitted unchanged beside the `compile_error!`s, so its callers and
//! rust-analyzer keep working (tokio #4162, thiserror's fallback).

mod args;
mod checks;
mod codegen;
mod reply;
mod token;
mod tx;
mod validate;

use proc_macro2::TokenStream;

use crate::common::codegen::fallback;
use crate::common::errors::Errors;
use crate::common::item;

/// Expands `#[idempotent(args)] item`.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = args::parse(args, &mut errors);
    let Some(parsed) = item::parse(&args::TABLE, item.clone(), &mut errors) else {
        return fallback(errors, item);
    };
    match validate::validate(args, &parsed, &mut errors) {
        Some(plan) if errors.is_empty() => codegen::expand(&plan),
        _ => fallback(errors, parsed.fallback_tokens(item)),
    }
}
