//! Turns a validated [`Plan`] into the expanded function. With the shared
//! pieces in `common/codegen.rs`, the only place `#[idempotent]` calls `quote!`.
//! All protocol logic lives in `idem::__private`; the expansion only describes
//! the call (see `docs/macro.md` for a full example).

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::validate::Plan;
use crate::common::codegen::{self, duration_fields, duration_hooks, some};
use crate::common::item::ItemFn;

/// `#[idempotent(..)] async fn f(..) -> R { body }` →
/// `async fn f(..) -> R { static SPEC; let key = ..; let call = Guarded::<R>::new(..)..; run::<R, _, _>(call, async { body }).await }`.
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
    // A `Json` reply's `Ok` type is emitted as `Replied<..>` (its replays' header).
    let marked;
    let sig = match plan.reply && super::reply::is_json_reply(plan.ret) {
        true => {
            marked = super::reply::marked_signature(sig, &krate);
            &marked
        }
        false => sig,
    };
    let spec = spec(plan, &krate);
    let key = codegen::key_chain(&krate, quote!(new(&__IDEM_SPEC)), &plan.key.pieces);
    let key = quote!(let __idem_key = #key;);
    let call = call(plan, &krate, body);
    let block = quote_spanned! {*brace_span=>
        {
            #(#inner_attrs)*
            #spec
            #key
            #call
        }
    };
    quote! {
        #(#outer_attrs)*
        #vis #sig #block
    }
}

/// The options → `static __IDEM_SPEC: Spec = Spec { function, template, scene, <options written>, ..Spec::DEFAULT };`
fn spec(plan: &Plan<'_>, krate: &TokenStream) -> TokenStream {
    let function = format!("::{}", plan.item.sig.ident);
    let template = &plan.key.template;
    let scene = &plan.key.scene;
    let mut fields = duration_fields(&plan.durations.fixed);
    if plan.reject {
        fields.extend(quote!(concurrent: #krate::__private::Concurrency::Reject,));
    }
    if let Some(version) = plan.version {
        let version = proc_macro2::Literal::u32_unsuffixed(version);
        fields.extend(quote!(version: #version,));
    }
    if let Some(backstop) = &plan.backstop {
        let backstop = some(backstop);
        fields.extend(quote!(backstop: #backstop,));
    }
    if plan.degrade {
        fields.extend(quote!(degrade: true,));
    }
    if plan.degrade_local {
        fields.extend(quote!(degrade_local: true,));
    }
    if !plan.savepoint {
        fields.extend(quote!(savepoint: false,));
    }
    let declared = plan
        .backstop
        .as_ref()
        .map(|_| backstop_decl(krate, plan.handle.is_some()));
    quote! {
        static __IDEM_SPEC: #krate::__private::Spec = #krate::__private::Spec {
            function: ::core::concat!(::core::module_path!(), #function),
            template: #template,
            scene: #scene,
            #fields
            ..#krate::__private::Spec::DEFAULT
        };
        #declared
    }
}

/// `backstop = "uk"` → `declare_backstop!(__IDEM_SPEC, own_handle);`: registers
/// the spec at link time, so `verify()` checks the constraint at start-up
/// without a second list (issue 24 n). Inside the body: no module-level item.
fn backstop_decl(krate: &TokenStream, own_handle: bool) -> TokenStream {
    quote! {
        #krate::__private::declare_backstop!(__IDEM_SPEC, #own_handle);
    }
}

/// The hooks every guarded call may have: `.handle(h)`, `.ttl(expr)` (the
/// durations written as expressions), `.fingerprint_with(..)`.
fn common_hooks(plan: &Plan<'_>, krate: &TokenStream) -> TokenStream {
    let mut hooks = TokenStream::new();
    if let Some(h) = &plan.handle {
        hooks.extend(codegen::handle_hook(krate, h));
    }
    hooks.extend(duration_hooks(&plan.durations.dynamic));
    if !plan.fingerprint.is_empty() {
        let adds = plan
            .fingerprint
            .iter()
            .map(|p| quote_spanned!(p.span()=> __idem_fp_add(__idem_fp, &#p);));
        let check = super::checks::fingerprint(krate);
        hooks.extend(quote!(.fingerprint_with(|__idem_fp| { #check #(#adds)* })));
    }
    hooks
}

/// `tx = tx`: `run_in_tx::<R, _, _>(call, tx, |__idem_tx, __idem_f| { let tx =
/// __idem_tx.transaction(); Box::pin(async move { fake return; { body } }) })`.
/// The body sees its own `tx` (the same `&mut sqlx::Transaction`, reborrowed
/// for the body's future) and the fence parameter, if any, as the claim's.
fn tx_call(
    plan: &Plan<'_>,
    krate: &TokenStream,
    body: &TokenStream,
    hooks: TokenStream,
    tx: &syn::Ident,
) -> TokenStream {
    let ret = plan.ret;
    let fake_return = codegen::fake_return(ret);
    let (keep, fence) = match &plan.fence {
        // The parameter is only a placeholder for the claim's fence.
        Some((f, _)) => (quote!(let _ = &#f;), quote!(let #f = __idem_f;)),
        None => (TokenStream::new(), TokenStream::new()),
    };
    quote! {
        #keep
        let __idem_call = #krate::__private::Guarded::<#ret>::new(&__IDEM_SPEC, __idem_key) #hooks;
        #krate::__private::run_in_tx::<#ret, _, _>(__idem_call, #tx, |__idem_tx, __idem_f| {
            let #tx = __idem_tx.transaction();
            #fence
            ::std::boxed::Box::pin(async move {
                #fake_return
                { #body }
            })
        })
        .await
    }
}

/// The guarded call: `let __idem_call = Guarded::<R>::new(&SPEC, key)[.hooks..];`
/// then `run::<R, _, _>(__idem_call, async { fake return; { body } }).await`.
fn call(plan: &Plan<'_>, krate: &TokenStream, body: &TokenStream) -> TokenStream {
    let ret = plan.ret;
    let mut hooks = common_hooks(plan, krate);
    if let Some(tx) = &plan.tx {
        return tx_call(plan, krate, body, hooks, tx);
    }
    if plan.backstop.is_some() {
        // `detect!` picks `std::error::Error`, then `AsRef<dyn Error>` (anyhow),
        // then nothing, for the `Err` type `Guarded::<ReturnType>` fixed (even
        // behind a `Result` alias).
        hooks.extend(quote! {
            .detect(|__idem_e| #krate::__private::detect!(__idem_e))
        });
    }
    if let Some(path) = &plan.on_conflict {
        // The references are bound first and handed on under names of the
        // expansion's own, at the path: a lookup of the wrong arity is one
        // error at `on_conflict`, without a suggestion that rewrites the
        // attribute's text.
        let args = &plan.conflict_args;
        let at = Span::mixed_site().located_at(path.span());
        let names: Vec<Ident> = (0..args.len())
            .map(|i| Ident::new(&format!("__idem_p{i}"), at))
            .collect();
        let lookup = quote_spanned!(path.span()=> {
            #(let #names = &#args;)*
            #path(#(#names),*)
        });
        let lookup = match plan.reply {
            // The lookup returns the handler's response; the call stores its form.
            true => quote!(#krate::__private::stored(#lookup)),
            false => lookup,
        };
        hooks.extend(quote!(.on_conflict(|| #lookup)));
    }
    let mut checks = TokenStream::new();
    if let Some(path) = &plan.terminal {
        checks.extend(super::checks::terminal(krate));
        hooks.extend(quote_spanned!(path.span()=> .terminal(__idem_terminal(#path))));
    }
    if let Some(piece) = &plan.token {
        // `AsRef<str>`: a `String`, `&str` or token newtype carries the token.
        let (at, path) = codegen::arg_path(piece);
        hooks.extend(quote_spanned!(at=> .token(::core::convert::AsRef::<str>::as_ref(&#path))));
    }
    let (mut cell, mut take) = (TokenStream::new(), TokenStream::new());
    if let Some((fence, mutable)) = &plan.fence {
        (cell, take) = codegen::fence_binding(krate, fence, *mutable);
        hooks.extend(quote!(.fence(&__idem_fence)));
    }
    let fake_return = codegen::fake_return(ret);
    let body = quote! {
        async {
            #fake_return
            #take
            // The body in its own block: a `use` inside it cannot change what
            // the generated paths mean (tracing #3306).
            { #body }
        }
    };
    if plan.reply {
        return reply_call(plan, krate, cell, hooks, body, checks);
    }
    // The call spans the return type: an unmet bound is reported there.
    let run = super::checks::run_call(krate, ret, &quote!(#ret), body);
    quote! {
        #checks
        #cell
        // `Guarded::<ReturnType>` and `__idem_run::<ReturnType, ..>` name the
        // user's type, so a result that cannot be stored is one error there.
        let __idem_call = #krate::__private::Guarded::<#ret>::new(&__IDEM_SPEC, __idem_key) #hooks;
        #run.await
    }
}

/// An axum response (`Json<T>`, `StoredResponse`, ..) is stored in its
/// `Reply::Stored` form: the call is typed `Http<R>`, the body's result goes
/// through `Http::keep` (a status the keeping rule does not keep is set aside
/// in `__idem_unkept` and the key released) and `finish` hands back the
/// response; a `Json` reply is `finish_marked` under `reported`, so a replay
/// carries `Idempotent-Replayed: true` (its `Ok` type is emitted as `Replied`).
fn reply_call(
    plan: &Plan<'_>,
    krate: &TokenStream,
    cell: TokenStream,
    hooks: TokenStream,
    body: TokenStream,
    checks: TokenStream,
) -> TokenStream {
    let ret = plan.ret;
    let typed = quote!(#krate::__private::Http<#ret>);
    let run = super::checks::run_call(
        krate,
        ret,
        &typed,
        quote!(async { #krate::__private::Http::keep(&__idem_unkept, #body.await) }),
    );
    let finish = match super::reply::is_json_reply(ret) {
        true => quote! {
            #krate::__private::finish_marked::<#ret, _>(
                &__idem_unkept,
                #krate::__private::reported(#run).await,
            )
        },
        false => quote!(#krate::__private::finish::<#ret>(&__idem_unkept, #run.await)),
    };
    quote! {
        #checks
        #cell
        let __idem_unkept = #krate::__private::Unkept::<#ret>::new();
        let __idem_call = #krate::__private::Guarded::<#typed>::new(&__IDEM_SPEC, __idem_key) #hooks;
        #finish
    }
}
