//! Attributes whose body returns the plain `Result<T, E>` while the signature
//! returns a wrapper of it (`#[state_transition]`: `Result<Transition<T>, E>`;
//! `#[consume_once]`: `Result<Consumed<T>, E>`): the line that types the body
//! as the runtime's `BodyOf<R>` ([`pin`]), and the function after an error
//! ([`body_fallback`]): emitted as written, the body would add a type error to
//! the real ones, so it is kept type-checked that way but never run.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::{Ident, Path};

use crate::common::args::Table;
use crate::common::codegen::krate;
use crate::common::errors::Errors;
use crate::common::item::{self, ItemFn};

/// `if let Some(r) = None::<<p>::BodyOf<R>> { return r; }`, first in the
/// block the body runs in: its `return`s and `?`s then have the body's type,
/// whatever the block's other statements. `p` is `<krate>::__private::<module>`.
pub(crate) fn pin(span: Span, p: &TokenStream, ret: &impl ToTokens) -> TokenStream {
    quote_spanned! {span=>
        if let ::core::option::Option::Some(__idem_ret) =
            ::core::option::Option::None::<#p::BodyOf<#ret>>
        {
            return __idem_ret;
        }
    }
}

/// `compile_error!`s + the function with its body pinned to
/// `<krate>::__private::<module>::BodyOf<R>`. `table` names the attribute in
/// the body's panic; `wrapper` is the signature's wrapper (`Consumed`).
pub(crate) fn body_fallback(
    errors: Errors,
    item: &ItemFn,
    path: Option<&Path>,
    module: &str,
    (table, wrapper): (&Table, &str),
) -> TokenStream {
    // No pin when the declared type is not `Result<wrapper<T>, E>`: that is
    // already one error, and `BodyOf<R>` would add the runtime's bound errors.
    let mut probe = Errors::default();
    let ret = item::wrapped_result_type(table, &item.sig, wrapper, &mut probe);
    let krate = krate(path);
    let module = Ident::new(module, Span::call_site());
    let p = quote!(#krate::__private::#module);
    let (outer_attrs, vis) = (&item.outer_attrs, &item.vis);
    let (inner_attrs, body) = (&item.inner_attrs, &item.body);
    // A function written without `async` is emitted `async` (as `#[tokio::main]`
    // does): its callers' `.await`s then add no error to the one at `fn`.
    let mut sig = item.sig.clone();
    sig.asyncness
        .get_or_insert_with(|| syn::Token![async](item.sig.fn_token.span));
    // Without the wrapper, the body is typed by the declared return type, as a
    // plain function's would be (else `Ok(())` adds "type annotations needed").
    let pin = match (ret, &item.sig.output) {
        (Some(ret), _) => Some(pin(Span::call_site(), &p, ret)),
        (None, syn::ReturnType::Type(_, declared)) => Some(quote! {
            if let ::core::option::Option::Some(__idem_ret) =
                ::core::option::Option::None::<#declared>
            {
                return __idem_ret;
            }
        }),
        (None, syn::ReturnType::Default) => None,
    };
    let keep = quote!(let _ = async { #pin { #body } };);
    let msg = format!("{} did not expand: see the compile errors", table.attr());
    let mut out = errors.into_compile_errors();
    out.extend(quote! {
        #(#outer_attrs)*
        #[allow(unused_variables, unreachable_code, clippy::diverging_sub_expression)]
        #vis #sig {
            #(#inner_attrs)*
            #keep
            ::core::panic!(#msg)
        }
    });
    out
}
