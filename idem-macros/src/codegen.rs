//! Turns a validated [`Plan`] into the expanded function. The only file that
//! calls `quote!`. All protocol logic lives in `idem::__private`; the expansion
//! only describes the call (see `docs/macro.md` for a full example).

use std::time::Duration;

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::item::ItemFn;
use crate::validate::{KeyPiece, Plan};

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
    let spec = spec(plan);
    let key = key(plan);
    let call = call(plan, body);
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
fn spec(plan: &Plan<'_>) -> TokenStream {
    let krate = &plan.krate;
    let function = format!("::{}", plan.item.sig.ident);
    let template = &plan.template;
    let scene = &plan.scene;
    let mut fields = TokenStream::new();
    if let Some(ttl) = plan.ttl {
        let ttl = duration(ttl);
        fields.extend(quote!(ttl: #ttl,));
    }
    if let Some(lease) = plan.lease {
        let lease = duration(lease);
        fields.extend(quote!(lease: #lease,));
    }
    if let Some(wait) = plan.wait {
        let wait = option(Some(duration(wait)));
        fields.extend(quote!(wait: #wait,));
    }
    if plan.reject {
        fields.extend(quote!(concurrent: #krate::__private::Concurrency::Reject,));
    }
    if let Some(version) = plan.version {
        let version = proc_macro2::Literal::u32_unsuffixed(version);
        fields.extend(quote!(version: #version,));
    }
    if let Some(backstop) = &plan.backstop {
        let backstop = option(Some(backstop.to_token_stream()));
        fields.extend(quote!(backstop: #backstop,));
    }
    if plan.degrade {
        fields.extend(quote!(degrade: true,));
    }
    quote! {
        static __IDEM_SPEC: #krate::__private::Spec = #krate::__private::Spec {
            function: ::core::concat!(::core::module_path!(), #function),
            template: #template,
            scene: #scene,
            #fields
            ..#krate::__private::Spec::DEFAULT
        };
    }
}

/// Template pieces → `let __idem_key = KeyBuf::new(&SPEC).lit("a:").arg(&p)...finish();`
fn key(plan: &Plan<'_>) -> TokenStream {
    let krate = &plan.krate;
    let pieces = plan.key.iter().map(|piece| match piece {
        KeyPiece::Lit(s) => quote!(.lit(#s)),
        KeyPiece::Arg { ident, fields, at } => {
            // Placed in the user's signature and resolved like the parameter: a
            // type that is not a key part is reported at the parameter's type, a
            // missing field at the parameter. Field names get the macro's own
            // hygiene so rustc offers no edit of the signature.
            let at = if fields.is_empty() { *at } else { ident.span() };
            let mut ident = ident.clone();
            ident.set_span(ident.span().located_at(at));
            let fields = fields
                .iter()
                .map(|f| field(f, Span::call_site().located_at(at)));
            quote_spanned!(at=> .arg(&#ident #(.#fields)*))
        }
    });
    quote! {
        let __idem_key = #krate::__private::KeyBuf::new(&__IDEM_SPEC)
            #(#pieces)*
            .finish();
    }
}

/// The guarded call: `let __idem_call = Guarded::<R>::new(&SPEC, key)[.hooks..];`
/// then `run::<R, _, _>(__idem_call, async { fake return; { body } }).await`.
fn call(plan: &Plan<'_>, body: &TokenStream) -> TokenStream {
    let krate = &plan.krate;
    let ret = plan.ret;
    let mut hooks = TokenStream::new();
    if let Some(h) = &plan.handle {
        hooks.extend(quote_spanned!(h.span()=> .handle(#h)));
    }
    if !plan.fingerprint.is_empty() {
        let adds = plan
            .fingerprint
            .iter()
            .map(|p| quote_spanned!(p.span()=> .add(&#p)));
        hooks.extend(quote!(.fingerprint_with(|__idem_fp| { __idem_fp #(#adds)*; })));
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
        let args = &plan.conflict_args;
        hooks.extend(quote_spanned!(path.span()=> .on_conflict(|| #path(#(&#args),*))));
    }
    if let Some(path) = &plan.terminal {
        hooks.extend(quote_spanned!(path.span()=> .terminal(#path)));
    }
    let mut cell = TokenStream::new();
    let mut take = TokenStream::new();
    if let Some((fence, mutable)) = &plan.fence {
        let mutable = mutable.then_some(());
        cell = quote!(let __idem_fence = #krate::__private::FenceCell::new(););
        hooks.extend(quote!(.fence(&__idem_fence)));
        // A `mut` parameter is assigned (so its `mut` is used), else shadowed.
        take = match mutable {
            Some(_) => quote!(#fence = __idem_fence.take(#fence);),
            None => quote!(let #fence = __idem_fence.take(#fence);),
        };
    }
    quote! {
        #cell
        // `Guarded::<ReturnType>` and `run::<ReturnType, ..>` name the user's type,
        // so a result that cannot be stored is one error there (cached 0043a).
        let __idem_call = #krate::__private::Guarded::<#ret>::new(&__IDEM_SPEC, __idem_key) #hooks;
        #krate::__private::run::<#ret, _, _>(
            __idem_call,
            async {
                // Pins the block's output type so `?` and `return` infer from the
                // signature (tracing and async-trait do the same).
                if let ::core::option::Option::Some(__idem_ret) = ::core::option::Option::None::<#ret> {
                    return __idem_ret;
                }
                #take
                // The body in its own block: a `use` inside it cannot change what
                // the generated paths mean (tracing #3306).
                { #body }
            },
        )
        .await
    }
}

fn field(name: &str, at: Span) -> TokenStream {
    match name.parse::<u32>() {
        Ok(i) => syn::Index { index: i, span: at }.into_token_stream(),
        Err(_) => syn::Ident::new(name, at).into_token_stream(),
    }
}

fn duration(d: Duration) -> TokenStream {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        let secs = syn::LitInt::new(&grouped(ms / 1000), Span::call_site());
        quote!(::core::time::Duration::from_secs(#secs))
    } else {
        let ms = syn::LitInt::new(&grouped(ms), Span::call_site());
        quote!(::core::time::Duration::from_millis(#ms))
    }
}

/// `86400` → `86_400`, as a reader would write it.
fn grouped(n: u128) -> String {
    let digits = n.to_string();
    if digits.len() <= 4 {
        return digits;
    }
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('_');
        }
        out.push(c);
    }
    out
}

fn option(v: Option<TokenStream>) -> TokenStream {
    match v {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}
