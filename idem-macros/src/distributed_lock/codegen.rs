//! Turns a validated [`Plan`] into the expanded function. All protocol logic
//! lives in `idem::__private::lock`; the expansion only describes the call.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::validate::Plan;
use crate::common::codegen::{self, duration_fields, duration_hooks};
use crate::common::item::ItemFn;

/// `#[distributed_lock(..)] async fn f(..) -> R { body }` →
/// `async fn f(..) -> R { static LOCK; let key = ..; lock::<R, _>(Locked::<R>::new(..).., async { body }).await }`.
pub(crate) fn expand(plan: &Plan<'_>) -> TokenStream {
    let ItemFn {
        outer_attrs,
        vis,
        sig,
        inner_attrs,
        body,
        brace_span,
    } = plan.item;
    let krate = codegen::krate(plan.krate.as_ref());
    let spec = spec(plan, &krate);
    let key = codegen::key_chain(&krate, quote!(for_lock(&__IDEM_LOCK)), &plan.key.pieces);
    let ret = plan.ret;
    let mut hooks = TokenStream::new();
    if let Some(h) = &plan.handle {
        hooks.extend(codegen::handle_hook(&krate, h));
    }
    hooks.extend(duration_hooks(&plan.durations.dynamic));
    let (mut cell, mut take) = (TokenStream::new(), TokenStream::new());
    if let Some((fence, mutable)) = &plan.fence {
        (cell, take) = codegen::fence_binding(&krate, fence, *mutable);
        hooks.extend(quote!(.fence(&__idem_fence)));
    }
    let fake_return = codegen::fake_return(ret);
    let block = quote_spanned! {*brace_span=>
        {
            #(#inner_attrs)*
            #spec
            let __idem_key = #key;
            #cell
            let __idem_call = #krate::__private::Locked::<#ret>::new(&__IDEM_LOCK, __idem_key) #hooks;
            #krate::__private::lock::<#ret, _>(
                __idem_call,
                async {
                    #fake_return
                    #take
                    // The body in its own block (tracing #3306).
                    { #body }
                },
            )
            .await
        }
    };
    quote! {
        #(#outer_attrs)*
        #vis #sig #block
    }
}

/// The options → `static __IDEM_LOCK: LockSpec = LockSpec { function, template, scene, <options written>, ..LockSpec::DEFAULT };`
fn spec(plan: &Plan<'_>, krate: &TokenStream) -> TokenStream {
    let function = format!("::{}", plan.item.sig.ident);
    let template = &plan.key.template;
    let scene = &plan.key.scene;
    let fields = duration_fields(&plan.durations.fixed);
    // With every option written, `..DEFAULT` would be a needless update (clippy).
    let rest = if plan.durations.all_fixed(&["lease", "wait", "max_hold"]) {
        TokenStream::new()
    } else {
        quote!(..#krate::__private::LockSpec::DEFAULT)
    };
    quote! {
        static __IDEM_LOCK: #krate::__private::LockSpec = #krate::__private::LockSpec {
            function: ::core::concat!(::core::module_path!(), #function),
            template: #template,
            scene: #scene,
            #fields
            #rest
        };
    }
}
