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

#[cfg(test)]
mod tests {
    fn expand(src: &str) -> String {
        super::expand(src.parse().unwrap()).to_string()
    }

    #[test]
    fn machine_errors_are_reported_together() {
        let out = expand(
            r#"#[state_machine(edges(A -> B, A -> B, B -> C, Q -> A), acylic)]
               enum M { A, #[state_machine(value = "A")] B, C, D(u8) }"#,
        );
        for needle in [
            "edge `A -> B` is declared twice",
            "`M` has no state `Q`",
            "unknown option `acylic`",
            "did you mean `acyclic`?",
            "both stored as `A`",
            "state `D` has fields",
            "state `D` cannot be reached",
        ] {
            assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
        }
        assert!(expand("struct S;").contains("applies to a field-less enum"));
        assert!(expand("enum E { A }").contains("needs its edges"));
    }
}
