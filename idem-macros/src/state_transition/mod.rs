//! `#[state_transition]`: parse (`args.rs`) → validate (`validate.rs`) →
//! expand (`codegen.rs`); and `#[transitions]` on an `impl` (`inherit.rs`),
//! whose machine-level options the methods' bare `#[state_transition(from, to)]`
//! inherit. On any error the original function is emitted unchanged beside the
//! `compile_error!`s.

mod args;
mod codegen;
mod inherit;
mod validate;

use proc_macro2::TokenStream;

use crate::common::codegen::fallback;
use crate::common::errors::Errors;
use crate::common::item;

pub(crate) use inherit::expand_impl;

/// Expands `#[state_transition(args)] item`.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    expand_with(args, None, item)
}

/// Expands one method, filling options it lacks from `shared`.
fn expand_with(args: TokenStream, shared: Option<&args::Args>, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let mut parsed_args = args::parse(&args::TABLE, args, &mut errors);
    if let Some(shared) = shared {
        parsed_args.inherit(shared);
    }
    let Some(parsed) = item::parse(&args::TABLE, item.clone(), &mut errors) else {
        return fallback(errors, item);
    };
    match validate::validate(parsed_args, &parsed, &mut errors) {
        Some(plan) if errors.is_empty() => codegen::expand(&plan),
        _ => fallback(errors, item),
    }
}
