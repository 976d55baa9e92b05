//! Turns a validated [`Plan`] into the expanded function: the only place
//! `#[consume_once]` calls `quote!`. The insert, the savepoint and the
//! outcome live behind `idem::__private::consume::run`, one call; the
//! expansion describes it.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::validate::Plan;
use crate::common::codegen::{arg_path, duration, krate};
use crate::common::item::ItemFn;
use crate::common::wrapped_body::pin;

/// `#[consume_once(..)] async fn f(.., tx, msg) -> R { body }` →
/// `async fn f(..) -> R { static SPEC; run::<R, _, _>(&SPEC, handle, &msg.id,
/// Some(&msg.order_no), &mut *tx, |__idem_tx| Box::pin(async {
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
    let p = quote!(#krate::__private::consume);
    let (ret, tx) = (plan.ret, &plan.tx);
    let (consumer, msg_type) = (&plan.consumer, &plan.msg_type);
    let log = plan.log.as_ref().map_or_else(
        || quote!(#krate::consume::DEFAULT_LOG_TABLE),
        |l| quote!(#l),
    );
    let retention = plan
        .retention
        .map_or_else(|| quote!(#krate::consume::DEFAULT_RETENTION), duration);
    let handle = plan.handle.as_ref().map_or_else(
        || quote!(::core::option::Option::None),
        |h| quote_spanned!(h.span()=> ::core::option::Option::Some(#h)),
    );
    let (id_at, id) = arg_path(&plan.msg_id);
    let id = quote_spanned!(id_at=> &#id);
    let biz = match &plan.biz_id {
        Some(b) => {
            let (at, path) = arg_path(b);
            quote_spanned!(at=> ::core::option::Option::Some(&#path))
        }
        None => quote!(::core::option::Option::None),
    };
    let without = match plan.savepoint {
        true => TokenStream::new(),
        false => quote!(.without_savepoint()),
    };
    let pin = pin(*brace_span, &p, &ret);
    let block = quote_spanned! {*brace_span=>
        {
            #(#inner_attrs)*
            static __IDEM_CONSUME: #p::ConsumeSpec =
                #p::ConsumeSpec::new(#consumer, #msg_type, #log, #retention) #without;
            // `run::<ReturnType, ..>` names the user's type: a wrong one is one
            // error there. The body gets `tx` back from the runtime, with the
            // type written, between the insert and the savepoint's end.
            #p::run::<#ret, _, _>(
                &__IDEM_CONSUME, #handle, #id, #biz, &mut *#tx,
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
