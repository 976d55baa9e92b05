//! `#[derive(StateMachine)]` expansion: enum + checked graph → an inherent
//! impl (`STATES`, `EDGES`, `as_str`, `can`, `is_past` when acyclic, and the
//! hidden `const fn`s the `#[state_transition]` checks call), the
//! `idem::StateMachine` impl, `FromStr`, `Display`, and the `sqlx` text impls.

use proc_macro2::TokenStream;
use quote::quote;

use super::graph::Graph;
use super::parse::Machine;
use crate::common::codegen::krate;

/// `Machine` + `Graph` → the items listed in the module docs.
pub(crate) fn expand(m: &Machine, g: &Graph) -> TokenStream {
    let krate = krate(m.krate.as_ref());
    let p = quote!(#krate::__private::state);
    let ident = &m.ident;
    let name = ident.to_string();
    let vars: Vec<_> = m.variants.iter().map(|v| &v.ident).collect();
    let values: Vec<_> = m.variants.iter().map(|v| v.value.as_str()).collect();
    let bytes: Vec<_> = values
        .iter()
        .map(|v| syn::LitByteStr::new(v.as_bytes(), proc_macro2::Span::call_site()))
        .collect();
    let edge = |&(a, b): &(usize, usize)| {
        let (a, b) = (vars[a], vars[b]);
        quote!((Self::#a, Self::#b))
    };
    let edges: Vec<_> = g.edges.iter().map(edge).collect();
    let can = pairs(quote!((from, to)), &edges);
    let listed = listed_edges(m, g);
    let acyclic = g.past.is_some();
    let is_past = g.past.as_ref().map(|past| {
        let n = vars.len();
        let pairs_past: Vec<_> = (0..n)
            .flat_map(|a| (0..n).map(move |b| (a, b)))
            .filter(|&(a, b)| past[a][b])
            .map(|p| edge(&p))
            .collect();
        let body = pairs(quote!((current, to)), &pairs_past);
        quote! {
            /// Can `current` be reached from `to` along the edges (so a request
            /// for `to` finding `current` is a repeat)? Generated for acyclic
            /// machines only.
            pub const fn is_past(current: Self, to: Self) -> bool { #body }
        }
    });
    let trait_past = is_past.as_ref().map(|_| {
        quote!(
            fn is_past(current: Self, to: Self) -> bool {
                Self::is_past(current, to)
            }
        )
    });
    let edge_check = edge_check(m, &listed, &p);
    let names: Vec<String> = vars.iter().map(|v| v.to_string()).collect();
    quote! {
        impl #ident {
            /// Every state, in declaration order; the first is the initial state.
            pub const STATES: &'static [Self] = &[#(Self::#vars),*];
            /// The declared edges, `(from, to)`.
            pub const EDGES: &'static [(Self, Self)] = &[#(#edges),*];
            /// The value stored in the state column.
            pub const fn as_str(self) -> &'static str {
                match self { #(Self::#vars => #values,)* }
            }
            /// Is `from -> to` a declared edge?
            pub const fn can(from: Self, to: Self) -> bool { #can }
            #is_past
            #[doc(hidden)]
            pub const fn __idem_edge(from: Self, to: Self) { #edge_check }
            #[doc(hidden)]
            pub const fn __idem_name(self) -> &'static str {
                match self { #(Self::#vars => #names,)* }
            }
            #[doc(hidden)]
            pub const fn __idem_stored(value: &str) -> Self {
                match value.as_bytes() {
                    #(#bytes => Self::#vars,)*
                    // Names the typo and the closest stored value (`__private::diag`).
                    _ => match #krate::__private::unknown_stored(#name, value, &[#(#values),*]) {
                        ::core::option::Option::Some(__idem_msg) => ::core::panic!("{}", __idem_msg.as_str()),
                        ::core::option::Option::None => ::core::unreachable!(),
                    },
                }
            }
        }
        impl #p::StateMachine for #ident {
            const NAME: &'static str = #name;
            const STATES: &'static [Self] = Self::STATES;
            const EDGES: &'static [(Self, Self)] = Self::EDGES;
            const ACYCLIC: bool = #acyclic;
            fn stored(self) -> &'static str { Self::as_str(self) }
            fn from_stored(value: &str) -> ::core::option::Option<Self> {
                match value {
                    #(#values => ::core::option::Option::Some(Self::#vars),)*
                    _ => ::core::option::Option::None,
                }
            }
            fn can(from: Self, to: Self) -> bool { Self::can(from, to) }
            #trait_past
        }
        impl ::core::str::FromStr for #ident {
            type Err = #p::UnknownState;
            fn from_str(s: &str) -> ::core::result::Result<Self, Self::Err> {
                <Self as #p::StateMachine>::from_stored(s).ok_or_else(|| #p::UnknownState {
                    machine: #name,
                    value: ::std::borrow::ToOwned::to_owned(s),
                })
            }
        }
        impl ::core::fmt::Display for #ident {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(<Self as #p::StateMachine>::stored(*self))
            }
        }
        #p::state_sqlx!(#ident);
    }
}

/// `matches!(scrutinee, p1 | p2 ..)`, or `false` for no pairs.
fn pairs(scrutinee: TokenStream, pats: &[TokenStream]) -> TokenStream {
    if pats.is_empty() {
        quote!({ let _ = #scrutinee; false })
    } else {
        quote!(::core::matches!(#scrutinee, #(#pats)|*))
    }
}

/// "`WaitPay -> PaySuccess`, `PaySuccess -> Shipped`".
fn listed_edges(m: &Machine, g: &Graph) -> String {
    let list: Vec<String> = g
        .edges
        .iter()
        .map(|&(a, b)| format!("`{} -> {}`", m.variants[a].ident, m.variants[b].ident))
        .collect();
    if list.is_empty() {
        "none".to_owned()
    } else {
        list.join(", ")
    }
}

/// The body of `__idem_edge`: `if !Self::can(from, to)`, a const panic naming
/// the undeclared edge and the declared ones. The message is assembled by
/// `EdgeMessage` from the machine's literal text and the two states' names
/// (`__idem_name`, one arm per state), so the check is linear in the states,
/// where one arm per pair of states was quadratic.
fn edge_check(m: &Machine, listed: &str, p: &TokenStream) -> TokenStream {
    let prefix = format!("`{}` declares no edge `", m.ident);
    let suffix = format!("`; its edges are {listed}");
    quote! {
        if !Self::can(from, to) {
            ::core::panic!("{}", #p::EdgeMessage::new()
                .push(#prefix)
                .push(Self::__idem_name(from))
                .push(" -> ")
                .push(Self::__idem_name(to))
                .push(#suffix)
                .as_str())
        }
    }
}
