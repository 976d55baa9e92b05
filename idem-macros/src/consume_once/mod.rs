//! `#[consume_once]`: parse (`args.rs`) → validate (`validate.rs`) → expand
//! (`codegen.rs`). On any error the original function is emitted unchanged
//! beside the `compile_error!`s (its body still type-checked as a consumer's).

mod args;
mod codegen;
mod validate;

use proc_macro2::TokenStream;

use crate::common::codegen::fallback;
use crate::common::errors::Errors;
use crate::common::item;
use crate::common::wrapped_body::body_fallback;

/// Expands `#[consume_once(args)] item`.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let parsed_args = args::parse(args, &mut errors);
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
            "consume",
            (&args::TABLE, "Consumed"),
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
            r#"msg_id = "msg.id", biz_id = "<mgs.order_no>", log = "bad table", retention = "0s""#,
            "fn f(conn: &mut T, msg: &M) -> Result<Consumed<()>, E> { Ok(()) }",
        );
        for needle in [
            "fn f (conn : & mut T",
            "did not expand",
            "requires an `async fn`",
            "expected one placeholder",
            "unknown parameter `mgs` in `biz_id`",
            "zero",
            "add a parameter `tx",
            "not a usable log table name",
        ] {
            assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
        }
        let out = expand(
            "",
            "async fn f(tx: &mut T, msg: &M) -> Result<Consumed<()>, E> { Ok(()) }",
        );
        assert!(out.contains("missing `msg_id`"), "{out}");
    }

    #[test]
    fn no_input_panics() {
        for (args, item) in [
            ("", "struct S;"),
            ("msg_id = ", "async fn f() -> Result<u8, E> { Ok(1) }"),
            (
                "msg_id = \"<>\", tx = a.b",
                "async fn f(tx: T) -> R { Ok(1) }",
            ),
            ("msg_id = \"<a><b>\"", "async fn f(tx: T, a: u8) {}"),
            ("= = =", "impl X {}"),
        ] {
            let out = expand(args, item);
            assert!(
                out.contains("compile_error"),
                "no error for {args} / {item}: {out}"
            );
        }
    }
}
