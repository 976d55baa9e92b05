//! Attributes whose body returns the plain `Result<T, E>` while the signature
//! returns a wrapper of it (`#[state_transition]`: `Result<Transition<T>, E>`;
//! `#[consume_once]`: `Result<Consumed<T>, E>`): the line that types the body
//! as the runtime's `BodyOf<R>` ([`pin`]), and the function after an error
//! ([`body_fallback`]): emitted as written, the body would add a type error to
//! the real ones, so it is kept type-checked that way but never run.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::{Ident, Path};

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
/// `<krate>::__private::<module>::BodyOf<R>`. `attr` names the attribute in
/// the body's panic (`consume_once`).
pub(crate) fn body_fallback(
    errors: Errors,
    item: &ItemFn,
    path: Option<&Path>,
    module: &str,
    attr: &str,
) -> TokenStream {
    let mut probe = Errors::default();
    let ret = item::result_type(&item.sig, "", &mut probe);
    let krate = krate(path);
    let module = Ident::new(module, Span::call_site());
    let p = quote!(#krate::__private::#module);
    let (outer_attrs, vis, sig) = (&item.outer_attrs, &item.vis, &item.sig);
    let (inner_attrs, body) = (&item.inner_attrs, &item.body);
    let pin = ret.map(|ret| pin(Span::call_site(), &p, ret));
    let keep = match sig.asyncness {
        Some(_) => quote!(let _ = async { #pin { #body } };),
        None => quote!(let _ = || { #pin { #body } };),
    };
    let msg = format!("`#[{attr}]` did not expand: see the compile errors");
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
