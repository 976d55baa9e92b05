//! Typed readers for [`Arg::set`]: `fn(value, option name) -> syn::Result<T>`,
//! each error spanned at the value and showing the option's expected shape.

use crate::common::duration::{DurationArg, DurationLit};
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, Ident, LitStr, Path};
use syn::{ExprArray, LitInt};

/// `name = "..."`
pub(crate) fn string(value: &Expr, name: &str) -> syn::Result<LitStr> {
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

/// `name = "7d"`: a string literal only (options the macro must know at
/// compile time), its problems reported when the macro validates values.
pub(crate) fn duration_lit(value: &Expr, name: &str) -> syn::Result<DurationLit> {
    string(value, name).map(DurationLit::new)
}

/// `name = "1h30m"`: read as a string, parsed at once, its problems
/// reported when the macro validates values (see [`DurationLit`]); or
/// `name = <expression of type Duration>`, kept for the expansion. A bare
/// number has no unit: refused here rather than by rustc's type error.
pub(crate) fn duration(value: &Expr, name: &str) -> syn::Result<DurationArg> {
    match value {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Ok(DurationArg::Lit(DurationLit::new(s.clone()))),
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(n),
            ..
        }) => Err(no_unit(
            n.span(),
            name,
            &format!("{}s", n.base10_digits()),
            &format!("from_secs({})", n.base10_digits()),
        )),
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Float(x),
            ..
        }) => {
            let ms = x
                .base10_parse::<f64>()
                .map_or(0.0, |x| (x * 1000.0).round());
            Err(no_unit(
                x.span(),
                name,
                &format!("{ms}ms"),
                &format!("from_secs_f64({})", x.base10_digits()),
            ))
        }
        other => Ok(DurationArg::Expr(other.clone())),
    }
}

/// `name = false`
pub(crate) fn boolean(value: &Expr, name: &str) -> syn::Result<syn::LitBool> {
    match value {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Bool(b),
            ..
        }) => Ok(b.clone()),
        other => Err(syn::Error::new(
            other.span(),
            format!("expected `true` or `false`: `{name} = false`"),
        )),
    }
}

/// `name = 2`
pub(crate) fn int(value: &Expr, name: &str) -> syn::Result<LitInt> {
    match value {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => Ok(i.clone()),
        other => Err(syn::Error::new(
            other.span(),
            format!("expected an integer: `{name} = 2`"),
        )),
    }
}

/// `name = my_function` or `name = Type::method`: a real path, never Rust
/// code inside a string (cached's record 0006).
pub(crate) fn path(value: &Expr, name: &str) -> syn::Result<Path> {
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

/// `tx = tx`: a parameter name.
pub(crate) fn param(value: &Expr, name: &str) -> syn::Result<Ident> {
    match value {
        Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
            Ok(p.path.get_ident().cloned().expect("checked"))
        }
        other => Err(syn::Error::new(
            other.span(),
            format!("expected a parameter name: `{name} = tx`"),
        )),
    }
}

/// `name = <any expression>`, checked by rustc where it is used.
pub(crate) fn expr(value: &Expr, _name: &str) -> syn::Result<Expr> {
    Ok(value.clone())
}

/// `name = [a, b]`: parameter names.
pub(crate) fn idents(value: &Expr, name: &str) -> syn::Result<Vec<Ident>> {
    let bad = |span: Span| {
        syn::Error::new(
            span,
            format!("expected a list of parameter names: `{name} = [cmd, amount]`"),
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

/// A bare number as a duration: which unit? Shows both ways to write it.
fn no_unit(at: Span, name: &str, text: &str, call: &str) -> syn::Error {
    syn::Error::new(
        at,
        format!(
            "a duration needs a unit: `{name} = \"{text}\"`, or an expression of type \
             `Duration` such as `{name} = Duration::{call}`"
        ),
    )
}
