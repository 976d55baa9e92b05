//! Turns a validated [`Plan`] into the expanded function: the only place
//! `#[state_transition]` calls `quote!`. The statements, the savepoint and the
//! outcome live behind `idem::__private::state::run`, one call; the expansion
//! describes it and makes rustc check the edge.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::args::StateRef;
use super::validate::Plan;
use crate::common::codegen::{krate, some};
use crate::common::item::ItemFn;
use crate::common::wrapped_body::pin;

/// `#[state_transition(..)] async fn f(.., tx, ..) -> R { body }` →
/// `async fn f(..) -> R { static SPEC; const FROM; const TO; const edge checks;
/// run::<R, ..>(&SPEC, FROM, TO, handle, &key, &mut *tx, |__idem_tx| Box::pin(async {
/// let tx = __idem_tx.conn(); fake return; { body } })).await }`.
pub(crate) fn expand(plan: &Plan<'_>) -> TokenStream {
    let ItemFn {
        outer_attrs,
        vis,
        sig,
        inner_attrs,
        body,
        brace_span,
    } = plan.item;
    let krate = krate(plan.krate.as_ref());
    let p = quote!(#krate::__private::state);
    let (machine, ret, tx, key) = (&plan.machine, plan.ret, &plan.tx, &plan.key);
    let table = &plan.table;
    let key_column = &plan.key_column;
    let state_column = plan
        .state_column
        .as_ref()
        .map_or_else(|| quote!("status"), |c| quote!(#c));
    let version = plan
        .version_column
        .as_ref()
        .map_or_else(|| quote!(::core::option::Option::None), some);
    let handle = plan.handle.as_ref().map_or_else(
        || quote!(::core::option::Option::None),
        |h| quote_spanned!(h.span()=> ::core::option::Option::Some(#h)),
    );
    let sources = plan.from.len();
    let without = match plan.savepoint {
        true => TokenStream::new(),
        false => quote!(.without_savepoint()),
    };
    let from: Vec<_> = plan.from.iter().map(|s| state(machine, s)).collect();
    let to = state(machine, &plan.to);
    // One `const` per source, spanned at it: an undeclared edge is a const
    // panic naming it and the declared ones, underlined in the attribute.
    // Reads the source from `__IDEM_FROM`, so a bad stored value is one error.
    let checks = plan.from.iter().enumerate().map(|(i, s)| {
        let m = respanned(machine, span(s));
        quote_spanned!(span(s)=> const _: () = #m::__idem_edge(__IDEM_FROM[#i], __IDEM_TO);)
    });
    let key = quote_spanned!(key.span()=> &#key);
    let pin = pin(*brace_span, &p, &ret);
    let block = quote_spanned! {*brace_span=>
        {
            #(#inner_attrs)*
            static __IDEM_STATE: #p::StateSpec =
                #p::StateSpec::new(#table, #key_column, #state_column, #version, #sources) #without;
            const __IDEM_FROM: &[#machine] = &[#(#from),*];
            const __IDEM_TO: #machine = #to;
            #(#checks)*
            // `run::<ReturnType, ..>` names the user's type: a wrong one is one
            // error there (cached 0043a). The body gets `tx` back from the
            // runtime, with the type written, between the update and the
            // savepoint's end; its block borrows the other parameters as a
            // plain block would, and the boxed future stays `Send`.
            #p::run::<#ret, _, _, _, _>(
                &__IDEM_STATE, __IDEM_FROM, __IDEM_TO, #handle, #key, &mut *#tx,
                |__idem_tx| ::std::boxed::Box::pin(async {
                    // A body that does not use it warns no more than before.
                    #[allow(unused_variables)]
                    let #tx = __idem_tx.conn();
                    #pin
                    // The body in its own block (tracing #3306).
                    { #body }
                }),
            )
            .await
        }
    };
    quote! {
        #(#outer_attrs)*
        #vis #sig #block
    }
}

/// A state → `Machine::Variant` (spanned at the name, so rustc's "no variant"
/// points there) or `Machine::__idem_stored("VALUE")` (a const panic there).
fn state(machine: &syn::Path, s: &StateRef) -> TokenStream {
    match s {
        StateRef::Variant(v) => quote_spanned!(v.span()=> #machine::#v),
        StateRef::Stored(lit) => {
            // The machine respanned too, so rustc underlines the literal alone.
            let machine = respanned(machine, lit.span());
            quote_spanned!(lit.span()=> #machine::__idem_stored(#lit))
        }
    }
}

/// `path` with every segment at `at`: the edge check's error underlines the
/// source state alone, not the machine path written elsewhere.
fn respanned(path: &syn::Path, at: proc_macro2::Span) -> syn::Path {
    let mut p = path.clone();
    for seg in &mut p.segments {
        seg.ident.set_span(at);
    }
    if let Some(c) = &mut p.leading_colon {
        c.spans = [at, at];
    }
    p
}

fn span(s: &StateRef) -> proc_macro2::Span {
    match s {
        StateRef::Variant(v) => v.span(),
        StateRef::Stored(l) => l.span(),
    }
}
