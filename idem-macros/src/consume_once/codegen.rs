//! Turns a validated [`Plan`] into the expanded function: the only place
//! `#[consume_once]` calls `quote!`. The insert, the savepoint and the
//! outcome live in `idem::__private::consume`; the expansion describes the
//! call.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::validate::Plan;
use crate::common::codegen::{arg_path, duration, krate};
use crate::common::item::ItemFn;
use crate::common::wrapped_body::pin;

/// `#[consume_once(..)] async fn f(.., tx, msg) -> R { body }` →
/// `async fn f(..) -> R { static SPEC; let keys = keys(&SPEC, handle, &msg.id,
/// Some(&msg.order_no)); observed::<R>(handle, &keys, async { begin::<R, _>(..)
/// or return; let out = async { fake return; { body } }.await;
/// finish::<R, _>(entry, &mut *tx, out).await }).await }`.
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
    let pin = pin(*brace_span, &p, &ret);
    let block = quote_spanned! {*brace_span=>
        {
            #(#inner_attrs)*
            static __IDEM_CONSUME: #p::ConsumeSpec =
                #p::ConsumeSpec::new(#consumer, #msg_type, #log, #retention);
            // The handle is evaluated once, like the user wrote it once.
            let __idem_handle = #handle;
            let __idem_keys = #p::keys(&__IDEM_CONSUME, __idem_handle, #id, #biz);
            // `begin::<ReturnType, _>` names the user's type: a wrong one is one
            // error there. The body is a plain block between `begin` and
            // `finish`, so it uses `tx` as written and the future stays `Send`.
            #p::observed::<#ret>(__idem_handle, &__idem_keys, async {
                let __idem_entry = match #p::begin::<#ret, _>(
                    &__IDEM_CONSUME, &mut *#tx, &__idem_keys,
                ).await {
                    #p::Begun::Go(__idem_entry) => __idem_entry,
                    #p::Begun::Done(__idem_done) => return __idem_done,
                };
                let __idem_out = async {
                    #pin
                    // The body in its own block (tracing #3306).
                    { #body }
                }
                .await;
                #p::finish::<#ret, _>(__idem_entry, &mut *#tx, __idem_out).await
            })
            .await
        }
    };
    quote! {
        #(#outer_attrs)*
        #vis #sig #block
    }
}
