//! Expansion snapshots: each `tests/snapshots/<name>.rs` holds annotated
//! functions; their expansion, pretty-printed with `prettyplease`, must equal
//! `<name>.expanded.rs`. `IDEM_BLESS=1 cargo test -p idem-macros` rewrites them.
//! A new macro adds its name and `expand` to [`MACROS`].

use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::ToTokens;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots")
}

type Expand = fn(TokenStream, TokenStream) -> TokenStream;

/// Every attribute macro, by the last segment of its path (`idem::idempotent`).
const MACROS: &[(&str, Expand)] = &[
    ("idempotent", crate::idempotent::expand),
    ("distributed_lock", crate::distributed_lock::expand),
    ("state_transition", crate::state_transition::expand),
    ("consume_once", crate::consume_once::expand),
];

/// Expands every function in `source` that carries one of [`MACROS`].
fn expand_file(source: &str) -> String {
    let file = syn::parse_file(source).expect("snapshot input parses");
    let mut out = TokenStream::new();
    for item in file.items {
        match item {
            syn::Item::Fn(mut f) => match take_attr(&mut f.attrs) {
                Some((expand, args)) => out.extend(expand(args, f.into_token_stream())),
                None => out.extend(f.into_token_stream()),
            },
            syn::Item::Impl(mut imp) => {
                // `#[transitions]` on an impl expands its methods itself.
                if let Some(i) = imp.attrs.iter().position(|a| last_is(a, "transitions")) {
                    let args = match imp.attrs.remove(i).meta {
                        syn::Meta::List(l) => l.tokens,
                        _ => TokenStream::new(),
                    };
                    let tokens =
                        crate::state_transition::expand_impl(args, imp.into_token_stream());
                    out.extend(tokens);
                    continue;
                }
                for it in &mut imp.items {
                    if let syn::ImplItem::Fn(f) = it
                        && let Some((expand, args)) = take_attr(&mut f.attrs)
                    {
                        let tokens = expand(args, f.to_token_stream());
                        *f = syn::parse2(tokens).expect("expanded method parses");
                    }
                }
                out.extend(imp.into_token_stream());
            }
            // `#[derive(StateMachine)]`: the enum, then what the derive adds.
            syn::Item::Enum(e) if derives_state_machine(&e.attrs) => {
                let derived = crate::state_machine::expand(e.to_token_stream());
                out.extend(e.into_token_stream());
                out.extend(derived);
            }
            other => out.extend(other.into_token_stream()),
        }
    }
    let expanded = syn::parse_file(&out.to_string()).expect("expansion parses as a file");
    prettyplease::unparse(&expanded)
}

/// Is the attribute's path `name` or `…::name`?
fn last_is(a: &syn::Attribute, name: &str) -> bool {
    a.path().segments.last().is_some_and(|s| s.ident == name)
}

/// `#[derive(.., StateMachine)]` or `#[derive(.., idem::StateMachine)]`.
fn derives_state_machine(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .any(|a| {
            let mut found = false;
            let _ = a.parse_nested_meta(|m| {
                found |= m
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "StateMachine");
                Ok(())
            });
            found
        })
}

/// Removes the first macro attribute from `attrs`; returns its expander and arguments.
fn take_attr(attrs: &mut Vec<syn::Attribute>) -> Option<(Expand, TokenStream)> {
    let (i, expand) = attrs.iter().enumerate().find_map(|(i, a)| {
        let last = a.path().segments.last()?;
        MACROS
            .iter()
            .find(|(name, _)| last.ident == name)
            .map(|(_, expand)| (i, *expand))
    })?;
    match attrs.remove(i).meta {
        syn::Meta::List(l) => Some((expand, l.tokens)),
        _ => Some((expand, TokenStream::new())),
    }
}

#[test]
fn expansions_match_snapshots() {
    let bless = std::env::var_os("IDEM_BLESS").is_some();
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("snapshot dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "rs")
                && !p.to_string_lossy().ends_with(".expanded.rs")
        })
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 3, "expected at least three snapshot inputs");
    let mut stale = Vec::new();
    for input in inputs {
        let source = std::fs::read_to_string(&input).expect("read input");
        let actual = expand_file(&source);
        let expected_path = input.with_extension("expanded.rs");
        if bless {
            std::fs::write(&expected_path, &actual).expect("write snapshot");
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            stale.push(format!("{}:\n{actual}", expected_path.display()));
        }
    }
    assert!(
        stale.is_empty(),
        "expansions changed (IDEM_BLESS=1 to accept):\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_documented_expansion_is_the_snapshot() {
    let snapshot = std::fs::read_to_string(dir().join("readme.expanded.rs")).expect("snapshot");
    // The README links here instead of showing it (issue 27: a short README).
    let doc = "../docs/macro.md";
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(doc))
        .expect("documentation file");
    assert!(
        text.contains(&snapshot),
        "{doc} must show idem-macros/tests/snapshots/readme.expanded.rs verbatim"
    );
}

#[test]
fn errors_keep_the_function_and_report_everything() {
    let out = expand_file(
        r#"#[idempotent(key = "a b:<x>", ttl = "0s", tll = "1h")]
        fn f(y: u32) -> Result<u32, E> { Ok(y) }"#,
    );
    for needle in [
        "fn f(y: u32) -> Result<u32, E> {",
        "a space is not allowed",
        "unknown parameter `x` in key template",
        "`0s` must be greater than zero",
        "unknown option `tll`",
        "did you mean `ttl`?",
        "requires an `async fn`",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
}

#[test]
fn a_misspelt_required_option_is_one_error_not_two() {
    // `kye` is reported with its "did you mean `key`?", and not also as a
    // missing `key`; a required option missing without a typo still is.
    for (src, typo, missing) in [
        (
            r#"#[idempotent(kye = "a:<x>")] async fn f(x: u32) -> Result<u32, E> { Ok(x) }"#,
            "did you mean `key`?",
            "missing `key`",
        ),
        (
            r#"#[distributed_lock(kye = "a:<x>")] async fn f(x: u32) -> Result<u32, E> { Ok(x) }"#,
            "did you mean `key`?",
            "missing `key`",
        ),
        (
            r#"#[consume_once(msgid = "<m.id>")] async fn f(tx: &mut T, m: &M) -> Result<Consumed<()>, E> { Ok(()) }"#,
            "did you mean `msg_id`?",
            "missing `msg_id`",
        ),
    ] {
        let out = expand_file(src);
        assert!(out.contains(typo), "{src}:\n{out}");
        assert!(!out.contains(missing), "{src} reported twice:\n{out}");
    }
    let out =
        expand_file(r#"#[idempotent(ttl = "1h")] async fn f(x: u32) -> Result<u32, E> { Ok(x) }"#);
    assert!(out.contains("missing `key`"), "{out}");
}

#[test]
fn no_input_panics() {
    // Fragments that are not functions, or not valid arguments, give errors, not panics.
    let cases = [
        ("", "struct S;"),
        ("key = ", "async fn f() -> Result<u8, E> { Ok(1) }"),
        ("key = \"a:<b\"", "async fn f(b: u8) -> Result<u8, E> {"),
        ("= = =", "async fn f(b: u8) -> Result<u8, E> { Ok(b) }"),
        (
            "key = \"a:<(b)>\"",
            "async fn f((b, c): (u8, u8)) -> Result<u8, E> { Ok(b) }",
        ),
        (
            "key = \"\u{0}:<b>\", ttl = \"99999999999999999999d\"",
            "async fn f(b: u8) -> Result<u8, E> { Ok(b) }",
        ),
        (
            "crate = \"not a path\", key = \"a:<b>\"",
            "async fn f(b: u8) -> Result<u8, E> { Ok(b) }",
        ),
    ];
    for (args, item) in cases {
        let (args_text, item_text) = (args, item);
        let args: TokenStream = args_text.parse().unwrap_or_default();
        let item: TokenStream = item_text.parse().unwrap_or_default();
        let out = crate::idempotent::expand(args, item).to_string();
        assert!(
            out.contains("compile_error"),
            "no error for {args_text} / {item_text}: {out}"
        );
    }
}

proptest::proptest! {
    /// Whatever the key and durations say, the macro answers with tokens, never a panic.
    #[test]
    fn arbitrary_strings_never_panic(key in "\\PC{0,40}", ttl in "[0-9a-z ]{0,8}", field in "[a-z_.<>:0-9]{0,12}") {
        let args = quote::quote!(key = #key, ttl = #ttl);
        let item: TokenStream = "async fn f(a: u8, b: &str) -> Result<u8, E> { Ok(a) }".parse().unwrap();
        let _ = crate::idempotent::expand(args, item.clone());
        let key2 = format!("s:<{field}>");
        let _ = crate::idempotent::expand(quote::quote!(key = #key2, lease = #ttl), item);
    }
}
