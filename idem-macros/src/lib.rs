//! Attribute macros for `idem`. Use them through the `idem` crate
//! (`#[idem::idempotent(...)]`); the generated code calls `idem::__private`.

mod args;
mod codegen;
mod duration;
mod errors;
mod idempotent;
mod item;
mod template;
mod validate;

#[cfg(test)]
mod snapshots;

use proc_macro::TokenStream;

/// Makes an `async fn` returning `Result<T, E>` idempotent: the body runs once
/// per rendered key, and repeats within `ttl` get the stored result.
///
/// ```text
/// #[idem::idempotent(key = "order-create:<user_id>:<req_id>", ttl = "24h")]
/// async fn create_order(user_id: u64, req_id: &str) -> Result<Order, AppError> { .. }
/// ```
///
/// See the `idem` crate documentation for the options and the rules.
#[proc_macro_attribute]
pub fn idempotent(args: TokenStream, item: TokenStream) -> TokenStream {
    idempotent::expand(args.into(), item.into()).into()
}
