//! Checks of the user's types emitted first in an expansion, spanned at the
//! type: a projection through a public `idem::bounds` trait fails there with
//! that trait's message and no "required by a bound in `idem::__private::..`"
//! note, and rustc then reports nothing more for the same type at the calls
//! into the runtime (cached 0043a: one error at the user's return type).

use proc_macro2::TokenStream;
use quote::quote_spanned;
use syn::Type;
use syn::spanned::Spanned;

/// `R` → `let _: PhantomData<<R as IdempotentResult>::Out>;`: an
/// `#[idempotent]` result's `Ok` can be stored and its `Err` can carry an
/// `idem::Error`.
pub(crate) fn idempotent_result(krate: &TokenStream, ret: &Type) -> TokenStream {
    quote_spanned! {ret.span()=>
        let _: ::core::marker::PhantomData<<#ret as #krate::__private::IdempotentResult>::Out>;
    }
}
