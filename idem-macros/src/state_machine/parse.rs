//! Reads `#[derive(StateMachine)]`'s input: a field-less enum, its
//! `#[state_machine(edges(A -> B, ...), acyclic, crate = "...")]` attribute and
//! each variant's `#[state_machine(value = "...")]`. Every problem is recorded
//! with its span and reading goes on.

use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, LitStr, Token};

use crate::common::errors::{Errors, unknown_option};

/// The options of the enum's attribute.
const OPTIONS: &[&str] = &["edges", "acyclic", "crate"];

/// One `From -> To`.
pub(crate) struct EdgeLit {
    pub(crate) from: Ident,
    pub(crate) to: Ident,
}

impl Parse for EdgeLit {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let from = input.parse()?;
        input.parse::<Token![->]>()?;
        let to = input.parse()?;
        Ok(EdgeLit { from, to })
    }
}

/// A variant and its stored value.
pub(crate) struct Variant {
    pub(crate) ident: Ident,
    pub(crate) value: String,
    /// The `value = "..."` literal, or the variant when the case rule chose it.
    pub(crate) value_span: Span,
}

/// The derive's input, as written.
pub(crate) struct Machine {
    pub(crate) ident: Ident,
    pub(crate) variants: Vec<Variant>,
    pub(crate) edges: Vec<EdgeLit>,
    /// The `acyclic` flag, when given: reachability is asked for.
    pub(crate) acyclic: Option<Span>,
    pub(crate) krate: Option<syn::Path>,
}

/// Reads `input`; `None` when it is not an enum this derive can work with.
pub(crate) fn parse(input: &DeriveInput, errors: &mut Errors) -> Option<Machine> {
    let Data::Enum(data) = &input.data else {
        errors.at(
            input.ident.span(),
            "`#[derive(StateMachine)]` applies to a field-less enum: one variant per state",
        );
        return None;
    };
    if !input.generics.params.is_empty() {
        errors.at(
            input.generics.span(),
            "`#[derive(StateMachine)]` does not take generic parameters",
        );
    }
    let mut m = Machine {
        ident: input.ident.clone(),
        variants: Vec::new(),
        edges: Vec::new(),
        acyclic: None,
        krate: None,
    };
    let mut edges_seen = false;
    for attr in input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("state_machine"))
    {
        let r = attr.parse_nested_meta(|meta| {
            let name = meta
                .path
                .get_ident()
                .map(Ident::to_string)
                .unwrap_or_default();
            match name.as_str() {
                "edges" => {
                    let content;
                    syn::parenthesized!(content in meta.input);
                    let list = Punctuated::<EdgeLit, Token![,]>::parse_terminated(&content)?;
                    if edges_seen {
                        errors.at(
                            meta.path.span(),
                            "duplicate option `edges`; list every edge in one `edges(...)`",
                        );
                    }
                    edges_seen = true;
                    m.edges.extend(list);
                }
                "acyclic" => m.acyclic = Some(meta.path.span()),
                "crate" => {
                    let lit: LitStr = meta.value()?.parse()?;
                    match lit.parse::<syn::Path>() {
                        Ok(p) => m.krate = Some(p),
                        Err(_) => errors.at(lit.span(), "expected a path: `crate = \"::idem\"`"),
                    }
                }
                _ => errors.at(
                    meta.path.span(),
                    unknown_option(&name, "`#[state_machine]`", OPTIONS),
                ),
            }
            Ok(())
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    if !edges_seen {
        errors.at(
            input.ident.span(),
            "`#[derive(StateMachine)]` needs its edges: add `#[state_machine(edges(A -> B, B -> C))]`",
        );
    }
    if data.variants.is_empty() {
        errors.at(
            input.ident.span(),
            "a state machine needs at least one state",
        );
    }
    for v in &data.variants {
        if !matches!(v.fields, Fields::Unit) {
            errors.at(
                v.fields.span(),
                format!(
                    "state `{}` has fields; a state machine's states are field-less variants",
                    v.ident
                ),
            );
        }
        m.variants.push(variant(v, errors));
    }
    Some(m)
}

fn variant(v: &syn::Variant, errors: &mut Errors) -> Variant {
    let mut out = Variant {
        ident: v.ident.clone(),
        value: screaming_snake(&v.ident.to_string()),
        value_span: v.ident.span(),
    };
    for attr in v
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("state_machine"))
    {
        let r = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("value") {
                let lit: LitStr = meta.value()?.parse()?;
                if lit.value().is_empty() {
                    errors.at(lit.span(), "a stored value cannot be empty");
                }
                out.value = lit.value();
                out.value_span = lit.span();
            } else {
                let name = quote::ToTokens::to_token_stream(&meta.path).to_string();
                errors.at(
                    meta.path.span(),
                    unknown_option(&name, "a state's `#[state_machine]`", &["value"]),
                );
                if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<syn::Expr>()?;
                }
            }
            Ok(())
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    out
}

/// The default stored value: SCREAMING_SNAKE_CASE of the variant name
/// (`WaitPay` → `WAIT_PAY`, `HTTPError` → `HTTP_ERROR`, `Step2Done` → `STEP2_DONE`).
pub(crate) fn screaming_snake(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                out.push('_');
            }
        }
        out.extend(c.to_uppercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::screaming_snake;

    #[test]
    fn case_rule() {
        for (name, want) in [
            ("WaitPay", "WAIT_PAY"),
            ("PaySuccess", "PAY_SUCCESS"),
            ("Shipped", "SHIPPED"),
            ("HTTPError", "HTTP_ERROR"),
            ("Step2Done", "STEP2_DONE"),
            ("A", "A"),
        ] {
            assert_eq!(screaming_snake(name), want);
        }
    }
}
