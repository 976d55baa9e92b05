//! The function after an error in an attribute whose body returns the plain
//! `Result<T, E>` while the signature returns a wrapper of it
//! (`#[state_transition]`: `Result<Transition<T>, E>`; `#[consume_once]`:
//! `Result<Consumed<T>, E>`). Emitted as written, the body would add a type
//! error to the real ones, so it is kept type-checked against the runtime's
//! `BodyOf<R>` but never run.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Ident, Path};

use crate::common::codegen::krate;
use crate::common::errors::Errors;
use crate::common::item::{self, ItemFn};

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
    let module = Ident::new(module, proc_macro2::Span::call_site());
    let ItemFn {
        outer_attrs,
        vis,
        sig,
        inner_attrs,
        body,
        ..
    } = item;
    let pin = ret.map(|ret| {
        quote! {
            if let ::core::option::Option::Some(__idem_ret) =
                ::core::option::Option::None::<#krate::__private::#module::BodyOf<#ret>>
            {
                return __idem_ret;
            }
        }
    });
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
