//! Attribute macros for `idem`. Use them through the `idem` crate
//! (`#[idem::idempotent(...)]`); the generated code calls `idem::__private`.
//!
//! One thin entry point per macro below; each macro is a folder (`idempotent/`:
//! option table, validation, codegen) built on the shared kit in `common/`.
//! Entry points convert to `proc_macro2` streams at once, so unit tests and
//! the expansion snapshots call the same `expand`.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod common;
mod consume_once;
mod distributed_lock;
mod idempotent;
mod state_machine;
mod state_transition;

#[cfg(test)]
mod snapshots;

use proc_macro::TokenStream;

/// Makes an `async fn` returning `Result<T, E>` idempotent: the body runs once
/// per rendered key; repeats within `ttl` get the stored result, concurrent
/// duplicates wait for it (or are rejected), and a failed body releases the key.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use idem::{Idem, MemoryStore};
///
/// #[derive(Debug)]
/// struct AppError(idem::Error);
/// impl From<idem::Error> for AppError {
///     fn from(e: idem::Error) -> Self { AppError(e) }
/// }
///
/// static RUNS: AtomicUsize = AtomicUsize::new(0);
///
/// #[idem::idempotent(key = "order-create:<user_id>:<req_id>", ttl = "24h", handle = idem)]
/// async fn create_order(idem: &Idem, user_id: u64, req_id: &str) -> Result<String, AppError> {
///     RUNS.fetch_add(1, Ordering::SeqCst);
///     Ok(format!("order of {user_id} for {req_id}"))
/// }
///
/// # let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// # rt.block_on(async {
/// let idem = Idem::builder().store(MemoryStore::new()).namespace("shop").build().unwrap();
/// let first = create_order(&idem, 7, "req-1").await.unwrap();
/// let again = create_order(&idem, 7, "req-1").await.unwrap();
/// assert_eq!((first, RUNS.load(Ordering::SeqCst)), (again, 1));
/// # });
/// ```
///
/// With a database backstop (the unique index catches what the store missed;
/// `on_conflict` loads the first result):
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
/// | `ttl` | duration (`ms` `s` `m` `h` `d`, e.g. `"1h30m"`, or humantime's `"1h 30m"`; or an expression of type `Duration`) | `"24h"` |
/// | `lease` | duration, shorter than `ttl` | `"30s"` |
/// | `wait` | duration | `"5s"`, or the lease if shorter |
/// | `max_hold` | duration, at least the lease | 20 × the lease |
/// | `concurrent` | `"wait"` or `"reject"` | `"wait"` |
/// | `fingerprint` | `[param, ...]` | none |
/// | `version` | integer | `1` |
/// | `backstop` | `"unique_constraint_name"` | none |
/// | `on_conflict` | path to `async fn(&p1, &p2, ..) -> Result<T, E>` | none |
/// | `degrade` | `"backstop"`, or `"local"`: the backstop plus an in-process claim per key, so same-process duplicates wait for one body instead of each running into the constraint (requires `backstop`) | off |
/// | `terminal` | path to `fn(&E) -> bool` | none |
/// | `token` | `"<param>"`: a one-time token issued for scope `token:<scene>`, consumed when the body succeeds | none |
/// | `tx` | a parameter of type `&mut sqlx::Transaction<'_, DB>` (or a `&mut` connection): claim and record are written in it, committed or rolled back with the body's rows; excludes `degrade`, `backstop`, `on_conflict`, `terminal`, `token`, `concurrent`, `wait`, `lease`, `max_hold` | none |
/// | `handle` | expression of type `&idem::Idem` | the installed global |
/// | `crate` | `"path"` to the `idem` crate | `"::idem"` |
///
/// A duration written as a string literal is parsed and checked at compile
/// time; any other expression (`ORDER_TTL`, `Duration::from_secs(60)`,
/// `cfg.ttl()`) is evaluated on each call and checked then (`Error::Config`
/// naming the function). Unwritten durations come from the handle's settings
/// (`idem::settings`: handle defaults and per-scene overrides), then the
/// defaults above.
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
/// lock protects (`idem::lock::FencedUpdate`). A function without one takes the
/// lock with the store's cheapest claim (Redis: one native `SET … NX PX … GET`
/// instead of the fence-stamping script), as `Lock::run_unfenced` does.
///
/// | option | value | default |
/// |---|---|---|
/// | `key` | `"scene:<param>:<param.field>"` | required |
/// | `lease` | duration (as for `#[idempotent]`: a literal or a `Duration` expression) | `"30s"` |
/// | `wait` | duration (`"0s"` is not allowed, `Duration::ZERO` tries once) | `"5s"`, or the lease if shorter |
/// | `max_hold` | duration, at least the lease | 20 × the lease |
/// | `handle` | expression of type `&idem::Idem` | the installed global |
/// | `crate` | `"path"` to the `idem` crate | `"::idem"` |
#[proc_macro_attribute]
pub fn distributed_lock(args: TokenStream, item: TokenStream) -> TokenStream {
    distributed_lock::expand(args.into(), item.into()).into()
}

/// Derives `idem::StateMachine` for a field-less enum whose edges are declared
/// in one attribute; the first variant is the initial state.
///
/// ```text
/// #[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
/// #[state_machine(edges(WaitPay -> PaySuccess, PaySuccess -> Shipped, Shipped -> Received,
///                       PaySuccess -> Refunding, Refunding -> Refunded))]
/// enum OrderStatus { WaitPay, PaySuccess, Shipped, Received, Refunding, Refunded }
/// ```
///
/// Stored values default to SCREAMING_SNAKE_CASE of the variant (`WaitPay` is
/// stored as `"WAIT_PAY"`); `#[state_machine(value = "...")]` on a variant sets
/// another. Generates `STATES`, `EDGES`, `as_str`, `FromStr`, `Display`,
/// `const fn can(from, to)`, `const fn is_past(current, to)` when the machine
/// is acyclic (`#[state_machine(acyclic)]` makes a cycle an error), and `sqlx`
/// `Type`/`Encode`/`Decode` as text for each database feature of `idem`.
/// Unknown states in edges, a duplicate edge or stored value and a state not
/// reachable from the first are compile errors.
#[proc_macro_derive(StateMachine, attributes(state_machine))]
pub fn derive_state_machine(item: TokenStream) -> TokenStream {
    state_machine::expand(item.into()).into()
}

/// Moves a row along one declared edge of a state machine, in the caller's
/// transaction, and runs the body there when it moved.
///
/// ```text
/// #[idem::state_transition(machine = OrderStatus, from = WaitPay, to = PaySuccess,
///                          table = "t_order", key = order_no, key_column = "order_no", tx = tx)]
/// async fn on_paid(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, order_no: &str, pay_no: &str)
///     -> Result<idem::Transition<()>, AppError> { /* the body returns Result<(), AppError> */ }
/// ```
///
/// | option | value | default |
/// |---|---|---|
/// | `machine` | the `#[derive(StateMachine)]` enum | required |
/// | `from` | `Variant`, `"STORED"` or `[A, B]` | required |
/// | `to` | `Variant` or `"STORED"` | required |
/// | `table` | `"t_order"` | required |
/// | `key` | parameter or `param.field` | required |
/// | `key_column` | `"order_no"` (unique) | required |
/// | `tx` | the `&mut Transaction` (or connection) parameter | `tx` |
/// | `state_column` | `"status"` | `"status"` |
/// | `version_column` | `"version"`, incremented | none |
/// | `handle` | `&idem::Idem` for the stats | the installed global |
/// | `crate` | `"path"` to the `idem` crate | `"::idem"` |
///
/// An edge the machine does not declare, or a state it does not have, is a
/// compile error. The body returns `Result<T, E>`; the function returns
/// `Result<idem::Transition<T>, E>`: `Applied(T)` when this call moved the row,
/// `AlreadyApplied { current }` when it was already there (or past it),
/// `Error::NotFound` / `Error::InvalidTransition` otherwise. A body error
/// rolls back to a savepoint taken before the update.
#[proc_macro_attribute]
pub fn state_transition(args: TokenStream, item: TokenStream) -> TokenStream {
    state_transition::expand(args.into(), item.into()).into()
}

/// Consumes a broker message at most once per message id and per business id,
/// in the caller's transaction: a consume-log row is inserted (under a
/// savepoint) before the body, and the body's writes commit with it.
///
/// ```text
/// #[idem::consume_once(msg_id = "<msg.id>", biz_id = "<msg.order_no>", tx = tx)]
/// async fn on_refund(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, msg: &RefundMsg)
///     -> Result<idem::Consumed<()>, AppError> { /* the body returns Result<(), AppError> */ }
/// ```
///
/// | option | value | default |
/// |---|---|---|
/// | `msg_id` | `"<param>"` or `"<param.field>"`: the message id | required |
/// | `biz_id` | `"<param.field>"`: the business id (unique per consumer and message type) | none |
/// | `tx` | the `&mut Transaction` (or connection) parameter | `tx` |
/// | `consumer` | `"refund-service"`: the keys' scene | the function's name |
/// | `msg_type` | `"refund"`: with `biz_id`, the second unique key | the consumer |
/// | `log` | `"idem_consume_log"`: the log table | `"idem_consume_log"` |
/// | `retention` | duration (`ms` `s` `m` `h` `d`) a row is kept | `"7d"` |
/// | `handle` | `&idem::Idem` for the stats and namespace | the installed global |
/// | `crate` | `"path"` to the `idem` crate | `"::idem"` |
///
/// The body returns `Result<T, E>`; the function returns
/// `Result<idem::Consumed<T>, E>`: `Processed(T)` when this call wrote the log
/// row (commit, then acknowledge), `Duplicate { by }` when the message id, or
/// the business id of this type, is already logged (acknowledge and skip). A
/// body error rolls the row and the body's writes back to the savepoint, so a
/// redelivery runs again.
#[proc_macro_attribute]
pub fn consume_once(args: TokenStream, item: TokenStream) -> TokenStream {
    consume_once::expand(args.into(), item.into()).into()
}

/// On an `impl` block: machine-level options (`machine`, `table`, `key`,
/// `key_column`, `tx`, `state_column`, `version_column`, `handle`, `crate`)
/// that its methods' `#[state_transition(..)]` inherit (a method's own option
/// wins), so a bare `#[state_transition(from = "WAIT_PAY", to =
/// "PAY_SUCCESS")]` compiles. `key` and `tx` name each method's parameters.
#[proc_macro_attribute]
pub fn transitions(args: TokenStream, item: TokenStream) -> TokenStream {
    state_transition::expand_impl(args.into(), item.into()).into()
}
