//! The expansion's checks: the call of `idem::__private::run!`, and the local
//! check functions `__idem_terminal` and `__idem_fp_add`, which carry the
//! runtime's bounds spelled with the public `idem::bounds` traits.
//!
//! Why local: rustc ends an unmet bound's message with "required by a bound in
//! `<function>`" and shows that function's source. Were the bound on a
//! function of `idem::__private`, every such message would name idem's private
//! module and point into idem's sources. A function defined in the expansion
//! (or by the runtime's `run!`, for the main call) is shown at the user's own
//! code; its body calls the runtime, whose bounds it proves, so each unmet
//! bound is one error.

use proc_macro2::TokenStream;
use quote::quote;

/// `fn __idem_terminal(is_terminal)`: a terminal error is stored, so its type
/// must be `TerminalError`.
pub(super) fn terminal(krate: &TokenStream) -> TokenStream {
    quote! {
        fn __idem_terminal<E: #krate::bounds::TerminalError>(
            is_terminal: fn(&E) -> bool,
        ) -> #krate::__private::Terminal<E> {
            #krate::__private::Terminal::new(is_terminal)
        }
    }
}

/// `idem::__private::run!(__idem_run, __idem_run::<typed, _, _>(__idem_call, body))`:
/// the one runtime call, which defines the local function `__idem_run` with
/// the bounds (see `run!` in the runtime) and evaluates the call. The call is
/// written here, with the span of the user's return type: rustc reports an
/// unmet bound on `R` there (on stable, a type's span is its first token's).
pub(super) fn run_call(
    krate: &TokenStream,
    ret: &syn::Type,
    typed: &TokenStream,
    body: TokenStream,
) -> TokenStream {
    use quote::quote_spanned;
    use syn::spanned::Spanned;
    let call = quote_spanned!(ret.span()=> __idem_run::<#typed, _, _>(__idem_call, #body));
    // By the crate-root name: rustc's "this error originates in the macro …"
    // names the path as written, and a user's message names no private module.
    quote!(#krate::__idem_run!(__idem_run, #call))
}

/// `fn __idem_fp_add(fp, value)`: a value named in `fingerprint = [..]` is
/// serialized, so its type must be `Fingerprinted` (`Serialize`).
pub(super) fn fingerprint(krate: &TokenStream) -> TokenStream {
    quote! {
        fn __idem_fp_add<T: #krate::bounds::Fingerprinted + ?::core::marker::Sized>(
            fp: &mut #krate::__private::FingerprintBuilder,
            value: &T,
        ) {
            fp.add(value);
        }
    }
}
