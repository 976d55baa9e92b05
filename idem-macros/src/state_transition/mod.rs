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
use crate::common::wrapped_body::body_fallback;

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
    let krate = parsed_args
        .krate
        .as_ref()
        .and_then(|k| k.value.parse::<syn::Path>().ok());
    match validate::validate(parsed_args, &parsed, &mut errors) {
        Some(plan) if errors.is_empty() => codegen::expand(&plan),
        _ => body_fallback(
            errors,
            &parsed,
            krate.as_ref(),
            "state",
            (&args::TABLE, "Transition"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;

    fn expand(args: &str, item: &str) -> String {
        let args: TokenStream = args.parse().unwrap_or_default();
        let item: TokenStream = item.parse().unwrap_or_default();
        super::expand(args, item).to_string()
    }

    /// Every problem is reported at once, and the function is kept.
    #[test]
    fn errors_keep_the_function_and_report_everything() {
        let out = expand(
            r#"machine = M, from = A, table = "order s", key = no_such, key_column = "k", tx = txx"#,
            "fn f(tx: &mut T, order_no: &str) -> Result<Transition<()>, E> { Ok(()) }",
        );
        for needle in [
            "fn f (tx : & mut T",
            "did not expand",
            "requires an `async fn`",
            "needs `to = ...`",
            "`order s` is not a plain SQL identifier",
            "unknown parameter `no_such` in `key`",
            "unknown parameter `txx` in `tx`; did you mean `tx`?",
        ] {
            assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
        }
        let out = expand(
            r#"machine = M, from = A, to = B, table = "t", key = k, key_column = "k""#,
            "async fn f(conn: &mut C, k: &str) -> Result<Transition<()>, E> { Ok(()) }",
        );
        assert!(out.contains("add a parameter `tx"), "{out}");
    }

    #[test]
    fn no_input_panics() {
        for (args, item) in [
            ("", "struct S;"),
            ("from = ", "async fn f() -> Result<u8, E> { Ok(1) }"),
            ("from = [], to = [A]", "async fn f(tx: T) -> R { Ok(1) }"),
            (
                "machine = 3, key = (a, b), tx = a.b",
                "async fn f(tx: T) {}",
            ),
            ("= = =", "impl X {}"),
        ] {
            let out = expand(args, item);
            assert!(
                out.contains("compile_error"),
                "no error for {args} / {item}: {out}"
            );
            let imp = super::expand_impl(
                args.parse().unwrap_or_default(),
                item.parse().unwrap_or_default(),
            );
            let _ = imp.to_string();
        }
    }
}
