//! The option-parsing kit every macro uses. A macro declares a [`Table`] (its
//! name and option names) and routes each `name = value` to a slot with
//! [`Arg::set`] and a typed reader from [`read`]; this module does the rest:
//! `syn::meta::parser`, duplicate detection in one place (tracing once had a
//! copy-paste bug there), and unknown options with did-you-mean. Every message
//! names the macro, so `#[distributed_lock]` reports `in `#[distributed_lock]``.
//!
//! Values are only read here (right kind of token); whether they make sense is
//! the macro's `validate.rs`, with the value helpers at the end of this file.
//! Problems are recorded and parsing goes on, so every one is reported at once.

#[cfg(test)]
use proc_macro2::Span;
use proc_macro2::TokenStream;
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{Expr, Ident, LitStr, Path};

use crate::common::errors::{Errors, one_of, suggestion};

/// What one macro accepts.
#[derive(Debug)]
pub(crate) struct Table {
    /// The attribute's name as messages show it: `idempotent`.
    pub(crate) name: &'static str,
    /// Every option name, in documentation order.
    pub(crate) options: &'static [&'static str],
}

impl Table {
    /// `` `#[idempotent]` ``, for messages.
    pub(crate) fn attr(&self) -> String {
        format!("`#[{}]`", self.name)
    }
}

/// A value with its option's name, for "duplicate" and "missing" style errors
/// besides the value's own span.
#[derive(Debug)]
pub(crate) struct Opt<T> {
    pub(crate) name: Ident,
    pub(crate) value: T,
}

/// One `name = value` on its way to a macro's slot.
pub(crate) struct Arg<'a> {
    table: &'a Table,
    name: Ident,
    text: String,
    value: Expr,
    errors: &'a mut Errors,
}

impl Arg<'_> {
    /// The option's name as written.
    pub(crate) fn name(&self) -> &str {
        &self.text
    }

    /// Reads the value with `read` into `slot`; the one place duplicates are
    /// detected, so every option of every macro behaves alike.
    pub(crate) fn set<T>(
        &mut self,
        slot: &mut Option<Opt<T>>,
        read: fn(&Expr, &str) -> syn::Result<T>,
    ) {
        if slot.is_some() {
            self.errors.at(
                self.name.span(),
                format!(
                    "duplicate option `{}` in {}; remove one of them",
                    self.text,
                    self.table.attr()
                ),
            );
            return;
        }
        match read(&self.value, &self.text) {
            Ok(value) => {
                *slot = Some(Opt {
                    name: self.name.clone(),
                    value,
                })
            }
            Err(e) => self.errors.push(e),
        }
    }

    /// An option this macro does not have.
    pub(crate) fn unknown(&mut self) {
        unknown(self.table, &self.name, self.errors);
    }
}

/// Parses `tokens` as `name = value, ...`, handing each known-shaped option to
/// `route` (which calls [`Arg::set`], or [`Arg::unknown`] for other names).
pub(crate) fn parse(
    table: &Table,
    tokens: TokenStream,
    errors: &mut Errors,
    mut route: impl FnMut(&mut Arg<'_>),
) {
    let parser = syn::meta::parser(|meta| {
        let Some(name) = meta.path.get_ident().cloned() else {
            let shown = quote::ToTokens::to_token_stream(&meta.path)
                .to_string()
                .replace(' ', "");
            errors.at(
                meta.path.span(),
                format!(
                    "unknown option `{shown}` in {}; expected one of {}",
                    table.attr(),
                    one_of(table.options)
                ),
            );
            skip_value(&meta)?;
            return Ok(());
        };
        let text = name.to_string();
        // Every option is `name = value`; the value is parsed as an expression
        // first so a wrong kind of value is one error, not a parse stop.
        if !meta.input.peek(syn::Token![=]) {
            if table.options.contains(&text.as_str()) {
                errors.at(name.span(), format!("expected a value: `{text} = ...`"));
            } else {
                unknown(table, &name, errors);
            }
            skip_value(&meta)?;
            return Ok(());
        }
        let value: Expr = meta.value()?.parse()?;
        route(&mut Arg {
            table,
            name,
            text,
            value,
            errors: &mut *errors,
        });
        Ok(())
    });
    if let Err(e) = parser.parse2(tokens) {
        errors.push(e);
    }
}

fn unknown(table: &Table, name: &Ident, errors: &mut Errors) {
    errors.unknown_option(name.span(), &name.to_string(), &table.attr(), table.options);
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

/// Typed readers for [`Arg::set`]: `fn(value, option name) -> syn::Result<T>`,
/// each error spanned at the value and showing the option's expected shape.
pub(crate) mod read;

/// `option = "one"` of a fixed set of strings; `None` (recorded) for another.
pub(crate) fn choice(
    value: &LitStr,
    option: &str,
    choices: &[&'static str],
    errors: &mut Errors,
) -> Option<&'static str> {
    let text = value.value();
    let found = choices.iter().copied().find(|c| *c == text);
    if found.is_none() {
        let quoted: Vec<String> = choices.iter().map(|c| format!("\"{c}\"")).collect();
        let quoted: Vec<&str> = quoted.iter().map(String::as_str).collect();
        errors.at(
            value.span(),
            format!(
                "invalid value `{text}` for `{option}`; expected {}{}",
                one_of(&quoted),
                suggestion(&text, choices.iter().copied())
            ),
        );
    }
    found
}

/// `crate = "path"`: where the `idem` crate is; `None` when not written (the
/// codegen then uses `::idem`) or invalid (recorded).
pub(crate) fn crate_path(opt: Option<&Opt<LitStr>>, errors: &mut Errors) -> Option<Path> {
    let value = &opt?.value;
    match value.parse::<Path>() {
        Ok(p) => Some(p),
        Err(_) => {
            errors.at(
                value.span(),
                format!(
                    "`crate` must be a path such as `\"::idem\"`, not `{}`",
                    value.value()
                ),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    const TABLE: Table = Table {
        name: "demo",
        options: &["key", "lease", "hook"],
    };

    #[derive(Default)]
    struct Demo {
        key: Option<Opt<LitStr>>,
        lease: Option<Opt<crate::common::duration::DurationArg>>,
        hook: Option<Opt<Path>>,
    }

    fn demo(tokens: TokenStream) -> (Demo, String) {
        let mut errors = Errors::default();
        let mut d = Demo::default();
        parse(&TABLE, tokens, &mut errors, |arg| match arg.name() {
            "key" => arg.set(&mut d.key, read::string),
            "lease" => arg.set(&mut d.lease, read::duration),
            "hook" => arg.set(&mut d.hook, read::path),
            _ => arg.unknown(),
        });
        (d, errors.into_compile_errors().to_string())
    }

    #[test]
    fn messages_name_the_macro_and_its_options() {
        let (_, e) = demo(quote!(kye = "a:<b>", laese = "1s"));
        assert!(e.contains("unknown option `kye` in `#[demo]`; expected one of `key`, `lease` or `hook`; did you mean `key`?"), "{e}");
        assert!(e.contains("did you mean `lease`?"), "{e}");
        let (d, e) = demo(quote!(key = "a:<b>", kee = "x", key = "y", lease, a::b = 1));
        assert_eq!(d.key.unwrap().value.value(), "a:<b>");
        assert!(
            e.contains(
                "unknown option `kee` in `#[demo]`; expected one of `key`, `lease` or `hook`; did you mean `key`?"
            ),
            "{e}"
        );
        assert!(e.contains("duplicate option `key` in `#[demo]`"), "{e}");
        assert!(e.contains("expected a value: `lease = ...`"), "{e}");
        assert!(e.contains("unknown option `a::b` in `#[demo]`"), "{e}");
    }

    #[test]
    fn readers_reject_the_wrong_kind_of_value() {
        let (d, e) = demo(quote!(key = 1, lease = "5x", hook = "f"));
        assert!(d.key.is_none() && d.hook.is_none());
        assert!(
            e.contains("expected a string literal: `key = \\\"...\\\"`"),
            "{e}"
        );
        assert!(
            e.contains("expected a path, not a string: `hook = f`"),
            "{e}"
        );
        // A malformed duration is a value problem, reported when validated.
        let mut errors = Errors::default();
        assert_eq!(d.lease.unwrap().value.get(&mut errors), None);
        assert!(!errors.is_empty());
    }

    #[test]
    fn choices_suggest_the_nearest() {
        let mut errors = Errors::default();
        let lit = LitStr::new("rejct", Span::call_site());
        assert_eq!(
            choice(&lit, "concurrent", &["wait", "reject"], &mut errors),
            None
        );
        let e = errors.into_compile_errors().to_string();
        assert!(
            e.contains(
                "invalid value `rejct` for `concurrent`; expected `\\\"wait\\\"` or `\\\"reject\\\"`; did you mean `reject`?"
            ),
            "{e}"
        );
    }
}
