//! Parses `#[idempotent(...)]` arguments with `syn::meta::parser`, keeping every
//! value's span. Values are only read here; whether they make sense is
//! `validate.rs`'s job. Unknown and duplicate options are recorded and parsing
//! goes on, so every problem is reported at once.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{Expr, ExprArray, Ident, LitInt, LitStr, Path};

use crate::errors::{Errors, one_of, suggestion};

/// Every option name, in documentation order.
pub(crate) const OPTIONS: &[&str] = &[
    "key",
    "ttl",
    "lease",
    "wait",
    "concurrent",
    "fingerprint",
    "version",
    "backstop",
    "on_conflict",
    "degrade",
    "terminal",
    "handle",
    "crate",
];

/// A value with the span of the option's name (for "duplicate" and "missing"
/// style errors) besides its own.
#[derive(Debug)]
pub(crate) struct Opt<T> {
    pub(crate) name: Ident,
    pub(crate) value: T,
}

/// The arguments as written.
#[derive(Default, Debug)]
pub(crate) struct Args {
    pub(crate) key: Option<Opt<LitStr>>,
    pub(crate) ttl: Option<Opt<LitStr>>,
    pub(crate) lease: Option<Opt<LitStr>>,
    pub(crate) wait: Option<Opt<LitStr>>,
    pub(crate) concurrent: Option<Opt<LitStr>>,
    pub(crate) fingerprint: Option<Opt<Vec<Ident>>>,
    pub(crate) version: Option<Opt<LitInt>>,
    pub(crate) backstop: Option<Opt<LitStr>>,
    pub(crate) on_conflict: Option<Opt<Path>>,
    pub(crate) degrade: Option<Opt<LitStr>>,
    pub(crate) terminal: Option<Opt<Path>>,
    pub(crate) handle: Option<Opt<Expr>>,
    pub(crate) krate: Option<Opt<LitStr>>,
}

/// Parses the attribute arguments, recording problems in `errors`.
pub(crate) fn parse(tokens: TokenStream, errors: &mut Errors) -> Args {
    let mut args = Args::default();
    let parser = syn::meta::parser(|meta| {
        let Some(name) = meta.path.get_ident().cloned() else {
            let shown = quote::ToTokens::to_token_stream(&meta.path)
                .to_string()
                .replace(' ', "");
            errors.at(
                meta.path.span(),
                format!(
                    "unknown option `{shown}` in `#[idempotent]`; expected one of {}",
                    one_of(OPTIONS)
                ),
            );
            skip_value(&meta)?;
            return Ok(());
        };
        let text = name.to_string();
        // Every known option is `name = value`; the value is parsed as an
        // expression first so a wrong kind of value is one error, not a parse stop.
        let value: Expr = if meta.input.peek(syn::Token![=]) {
            meta.value()?.parse()?
        } else {
            if OPTIONS.contains(&text.as_str()) {
                errors.at(name.span(), format!("expected a value: `{text} = ...`"));
            } else {
                unknown(&name, errors);
            }
            skip_value(&meta)?;
            return Ok(());
        };
        match text.as_str() {
            "key" => set_once(&mut args.key, &name, lit_str(&value, &text), errors),
            "ttl" => set_once(&mut args.ttl, &name, lit_str(&value, &text), errors),
            "lease" => set_once(&mut args.lease, &name, lit_str(&value, &text), errors),
            "wait" => set_once(&mut args.wait, &name, lit_str(&value, &text), errors),
            "concurrent" => set_once(&mut args.concurrent, &name, lit_str(&value, &text), errors),
            "backstop" => set_once(&mut args.backstop, &name, lit_str(&value, &text), errors),
            "degrade" => set_once(&mut args.degrade, &name, lit_str(&value, &text), errors),
            "crate" => set_once(&mut args.krate, &name, lit_str(&value, &text), errors),
            "version" => set_once(&mut args.version, &name, lit_int(&value), errors),
            "fingerprint" => set_once(&mut args.fingerprint, &name, ident_list(&value), errors),
            "on_conflict" => set_once(&mut args.on_conflict, &name, path(&value, &text), errors),
            "terminal" => set_once(&mut args.terminal, &name, path(&value, &text), errors),
            "handle" => set_once(&mut args.handle, &name, Ok(value), errors),
            _ => unknown(&name, errors),
        }
        Ok(())
    });
    if let Err(e) = parser.parse2(tokens) {
        errors.push(e);
    }
    args
}

/// The one place duplicates are detected, so every option behaves alike.
fn set_once<T>(
    slot: &mut Option<Opt<T>>,
    name: &Ident,
    value: syn::Result<T>,
    errors: &mut Errors,
) {
    if slot.is_some() {
        errors.at(
            name.span(),
            format!("duplicate option `{name}` in `#[idempotent]`; remove one of them"),
        );
        return;
    }
    match value {
        Ok(value) => {
            *slot = Some(Opt {
                name: name.clone(),
                value,
            })
        }
        Err(e) => errors.push(e),
    }
}

fn unknown(name: &Ident, errors: &mut Errors) {
    let text = name.to_string();
    errors.at(
        name.span(),
        format!(
            "unknown option `{text}` in `#[idempotent]`; expected one of {}{}",
            one_of(OPTIONS),
            suggestion(&text, OPTIONS.iter().copied())
        ),
    );
}

/// Consumes whatever follows an option we will not use.
fn skip_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _ = meta.input.parse::<proc_macro2::Group>()?;
    }
    Ok(())
}

fn lit_str(value: &Expr, name: &str) -> syn::Result<LitStr> {
    match value {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Ok(s.clone()),
        other => Err(syn::Error::new(
            other.span(),
            format!("expected a string literal: `{name} = \"...\"`"),
        )),
    }
}

fn lit_int(value: &Expr) -> syn::Result<LitInt> {
    match value {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => Ok(i.clone()),
        other => Err(syn::Error::new(
            other.span(),
            "expected an integer: `version = 2`",
        )),
    }
}

fn path(value: &Expr, name: &str) -> syn::Result<Path> {
    match value {
        Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => Ok(p.path.clone()),
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Err(syn::Error::new(
            s.span(),
            format!("expected a path, not a string: `{name} = {}`", s.value()),
        )),
        other => Err(syn::Error::new(
            other.span(),
            format!("expected a function path: `{name} = my_function`"),
        )),
    }
}

fn ident_list(value: &Expr) -> syn::Result<Vec<Ident>> {
    let bad = |span: Span| {
        syn::Error::new(
            span,
            "expected a list of parameter names: `fingerprint = [cmd, amount]`",
        )
    };
    let Expr::Array(ExprArray { elems, .. }) = value else {
        return Err(bad(value.span()));
    };
    elems
        .iter()
        .map(|e| match e {
            Expr::Path(p) if p.qself.is_none() => {
                p.path.get_ident().cloned().ok_or_else(|| bad(e.span()))
            }
            other => Err(bad(other.span())),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn messages(tokens: TokenStream) -> (Args, String) {
        let mut errors = Errors::default();
        let args = parse(tokens, &mut errors);
        (args, errors.into_compile_errors().to_string())
    }

    #[test]
    fn reads_every_option() {
        let (a, e) = messages(quote!(
            key = "k:<a>",
            ttl = "1h",
            lease = "1s",
            wait = "2s",
            concurrent = "reject",
            fingerprint = [a, b],
            version = 3,
            backstop = "uk",
            on_conflict = find,
            degrade = "backstop",
            terminal = crate::is_final,
            handle = &IDEM,
            crate = "::idem"
        ));
        assert_eq!(e, "");
        assert_eq!(a.key.unwrap().value.value(), "k:<a>");
        assert_eq!(a.fingerprint.unwrap().value.len(), 2);
        assert_eq!(a.version.unwrap().value.base10_digits(), "3");
        assert!(a.terminal.is_some() && a.handle.is_some() && a.krate.is_some());
    }

    #[test]
    fn collects_unknown_duplicate_and_wrong_kinds() {
        let (_, e) = messages(quote!(
            key = "k:<a>",
            tll = "1h",
            key = "x:<a>",
            version = "2",
            on_conflict = "f"
        ));
        assert!(e.contains("unknown option `tll`"), "{e}");
        assert!(e.contains("did you mean `ttl`?"), "{e}");
        assert!(e.contains("duplicate option `key`"), "{e}");
        assert!(e.contains("expected an integer"), "{e}");
        assert!(e.contains("expected a path, not a string"), "{e}");
    }
}
