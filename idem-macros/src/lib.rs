//! Attribute macros for `idem`. Use them through the `idem` crate
//! (`#[idem::idempotent(...)]`); the generated code calls `idem::__private`.
//!
//! One thin entry point per macro below; each macro is a folder (`idempotent/`:
//! option table, validation, codegen) built on the shared kit in `common/`.
//! Entry points convert to `proc_macro2` streams at once, so unit tests and
//! the expansion snapshots call the same `expand`.

mod common;
mod distributed_lock;
mod idempotent;

#[cfg(test)]
mod snapshots;

use proc_macro::TokenStream;

/// Makes an `async fn` returning `Result<T, E>` idempotent: the body runs once
/// per rendered key; repeats within `ttl` get the stored result, concurrent
/// duplicates wait for it (or are rejected), and a failed body releases the key.
///
/// ```text
/// #[idem::idempotent(key = "order-create:<user_id>:<req_id>", ttl = "24h",
///                    backstop = "uk_order_no", on_conflict = find_order)]
/// async fn create_order(db: &PgPool, user_id: u64, req_id: &str, cmd: &CreateOrder)
///     -> Result<Order, AppError> { .. }
/// ```
///
/// `T: Serialize + DeserializeOwned + Send`, `E: From<idem::Error> + Send`. The
/// signature is unchanged; a parameter of type `idem::Fence` receives the claim's
/// fence (callers pass `Fence::NONE`).
///
/// | option | value | default |
/// |---|---|---|
/// | `key` | `"scene:<param>:<param.field>"` | required |
/// | `ttl` | duration (`ms` `s` `m` `h` `d`, e.g. `"1h30m"`) | `"24h"` |
/// | `lease` | duration, shorter than `ttl` | `"30s"` |
/// | `wait` | duration | the lease |
/// | `max_hold` | duration, at least the lease | 20 × the lease |
/// | `concurrent` | `"wait"` or `"reject"` | `"wait"` |
/// | `fingerprint` | `[param, ...]` | none |
/// | `version` | integer | `1` |
/// | `backstop` | `"unique_constraint_name"` | none |
/// | `on_conflict` | path to `async fn(&p1, &p2, ..) -> Result<T, E>` | none |
/// | `degrade` | `"backstop"` (requires `backstop`) | off |
/// | `terminal` | path to `fn(&E) -> bool` | none |
/// | `token` | `"<param>"`: a one-time token issued for scope `token:<scene>`, consumed when the body succeeds | none |
/// | `handle` | expression of type `&idem::Idem` | the installed global |
/// | `crate` | `"path"` to the `idem` crate | `"::idem"` |
///
/// Every mistake in the attribute is a compile error at its own span, all
/// reported at once; the function is then emitted unchanged.
#[proc_macro_attribute]
pub fn idempotent(args: TokenStream, item: TokenStream) -> TokenStream {
    idempotent::expand(args.into(), item.into()).into()
}

/// Runs an `async fn` returning `Result<T, E>` under a distributed lock: one
/// holder at a time per rendered key, across processes (on the installed store).
///
/// ```text
/// #[idem::distributed_lock(key = "lock:deduct:order:<order_no>", lease = "3s",
///                          wait = "500ms", max_hold = "60s")]
/// async fn deduct(db: &PgPool, order_no: &str, fence: idem::Fence) -> Result<(), AppError> { .. }
/// ```
///
/// `E: From<idem::Error> + Send`: a lock still busy after `wait` is
/// `idem::Error::LockBusy`. A watchdog renews the lease every third of it while
/// the body runs (up to `max_hold`); the lock is released when the body ends or
/// its future is dropped. A parameter of type `idem::Fence` receives this
/// acquisition's fence (callers pass `Fence::NONE`): write it with the rows the
/// lock protects (`idem::lock::FencedUpdate`).
///
/// | option | value | default |
/// |---|---|---|
/// | `key` | `"scene:<param>:<param.field>"` | required |
/// | `lease` | duration (`ms` `s` `m` `h` `d`) | `"30s"` |
/// | `wait` | duration (`"0s"` is not allowed; a short one tries about once) | the lease |
/// | `max_hold` | duration, longer than the lease | 20 × the lease |
/// | `handle` | expression of type `&idem::Idem` | the installed global |
/// | `crate` | `"path"` to the `idem` crate | `"::idem"` |
#[proc_macro_attribute]
pub fn distributed_lock(args: TokenStream, item: TokenStream) -> TokenStream {
    distributed_lock::expand(args.into(), item.into()).into()
}
