//! The expansion's local check functions: `__idem_run` and `__idem_terminal`
//! carry the runtime's bounds spelled with the public `idem::bounds` traits.
//!
//! Why local: rustc ends an unmet bound's message with "required by a bound in
//! `<function>`" and shows that function's source. Were the bound on
//! `idem::__private::run`, every such message would name idem's private module
//! and point into idem's sources. A function defined in the expansion is named
//! `__idem_run` and shown at the user's own attribute; its body calls the
//! runtime, whose bounds it proves, so each unmet bound is one error.

use proc_macro2::TokenStream;
use quote::quote;

/// `fn __idem_run(call, body)`: `Returns` by its parts (so a result that
/// cannot be stored reports the failing part, `Storable` or `IdemErrorInto`),
/// the lookup's `OnConflict` and a `Send` body.
pub(super) fn run(krate: &TokenStream) -> TokenStream {
    quote! {
        #[allow(clippy::type_complexity)]
        fn __idem_run<'a, R, C, Fut>(
            call: #krate::__private::Guarded<'a, R, C>,
            body: Fut,
        ) -> ::core::pin::Pin<::std::boxed::Box<
            dyn ::core::future::Future<Output = R> + ::core::marker::Send + 'a,
        >>
        where
            R: #krate::bounds::IsResult<
                    Ok: #krate::bounds::Storable,
                    Err: #krate::bounds::IdemErrorInto,
                > + 'a,
            C: #krate::__private::OnConflict<R::Ok, R::Err> + 'a,
            Fut: ::core::future::Future<Output = R> + ::core::marker::Send + 'a,
        {
            #krate::__private::run(call, body)
        }
    }
}

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

/// `__idem_run::<typed, _, _>(__idem_call, body)`, the call and the guarded
/// call's argument given the span of the user's return type: rustc reports an
/// unmet bound on `R` at that argument (on stable, a type's span is its first
/// token's).
pub(super) fn run_call(ret: &syn::Type, typed: &TokenStream, body: TokenStream) -> TokenStream {
    use quote::quote_spanned;
    use syn::spanned::Spanned;
    quote_spanned!(ret.span()=> __idem_run::<#typed, _, _>(__idem_call, #body))
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
