//! `#[derive(StateMachine)]`: parse (`parse.rs`: the enum and its
//! `#[state_machine]` attributes) → check (`graph.rs`: states, edges, stored
//! values, reachability, cycles) → expand (`codegen.rs`). On any error only the
//! `compile_error!`s are emitted (a derive adds items; the enum stays as written).

mod codegen;
mod graph;
mod parse;

use proc_macro2::TokenStream;

use crate::common::errors::Errors;

/// Expands `#[derive(StateMachine)] item`.
pub(crate) fn expand(item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let input: syn::DeriveInput = match syn::parse2(item) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let Some(machine) = parse::parse(&input, &mut errors) else {
        return errors.into_compile_errors();
    };
    let graph = graph::check(&machine, &mut errors);
    if errors.is_empty() {
        codegen::expand(&machine, &graph)
    } else {
        errors.into_compile_errors()
    }
}
