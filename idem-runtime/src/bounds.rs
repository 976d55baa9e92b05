//! What the attribute macros require of your types, as traits that compile
//! errors name ("the trait `Storable` is not implemented for `Order`").
//!
//! You never implement these: each is implemented for every type that
//! qualifies (`Storable` for every `Serialize + DeserializeOwned + Send` type,
//! `IdemErrorInto` for every `From<idem::Error> + Send` error). They are public
//! so that a message names them by a path you can look up here rather than by
//! the macros' internal module; each check is made once, at your return type,
//! with a message that says how to fix it (`#[diagnostic::on_unimplemented]`).

use serde::{Serialize, de::DeserializeOwned};

use crate::error::Error;

/// What an `#[idempotent]` function may return: `Result<T, E>` whose `Ok` value
/// can be stored and replayed and whose error can carry an `idem::Error`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the result of an `#[idempotent]` function",
    label = "expected `Result<T, E>`",
    note = "the function must return `Result<T, E>` with `T: Serialize + DeserializeOwned + Send` (it is stored and replayed) and `E: From<idem::Error> + Send`"
)]
pub trait Returns: IsResult<Ok: Storable, Err: IdemErrorInto> {}

// Blanket over `IsResult`, so a bound spelled by its parts
// (`R: IsResult<Ok: Storable, Err: IdemErrorInto>`, as the expansion's local
// `__idem_run` has it) proves `Returns`.
impl<R: IsResult<Ok: Storable, Err: IdemErrorInto>> Returns for R {}

/// A result value that can be stored and replayed. One bound, so a type missing
/// several of them is one error at the user's return type (`do_not_recommend`
/// keeps rustc from listing each missing trait separately).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored as the result of an `#[idempotent]` function",
    label = "the `Ok` type must implement `Serialize`, `DeserializeOwned` and `Send`",
    note = "the result is stored and replayed to repeated calls: derive `serde::Serialize` and `serde::Deserialize` for `{Self}`"
)]
pub trait Storable: Serialize + DeserializeOwned + Send {}

#[diagnostic::do_not_recommend]
impl<T: Serialize + DeserializeOwned + Send> Storable for T {}

/// An error type whose terminal errors can be stored and replayed (`terminal = ..`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored as a terminal error",
    label = "`terminal` stores errors, so the `Err` type must implement `Serialize` and `DeserializeOwned`",
    note = "derive `serde::Serialize` and `serde::Deserialize` for `{Self}`, or drop `terminal`"
)]
pub trait TerminalError: Serialize + DeserializeOwned {}

#[diagnostic::do_not_recommend]
impl<E: Serialize + DeserializeOwned> TerminalError for E {}

/// A value named in `fingerprint = [..]`: it is serialized into the request's
/// fingerprint, so a repeat with other values is told apart.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be part of a request fingerprint",
    label = "named in `fingerprint = [..]`, so it must implement `Serialize`",
    note = "derive `serde::Serialize` for the value's type, or leave it out of `fingerprint`"
)]
pub trait Fingerprinted: Serialize {}

#[diagnostic::do_not_recommend]
impl<T: Serialize + ?Sized> Fingerprinted for T {}

/// A business error that can carry an `idem::Error`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry an `idem::Error`",
    label = "the `Err` type must implement `From<idem::Error>` and `Send`",
    note = "add a variant wrapping `idem::Error` and implement `From<idem::Error>` for `{Self}` (with thiserror: `Idem(#[from] idem::Error)`); for a foreign error type such as `sqlx::Error`, return your own wrapper enum"
)]
pub trait IdemErrorInto: From<Error> + Send {}

#[diagnostic::do_not_recommend]
impl<E: From<Error> + Send> IdemErrorInto for E {}

/// Names the `Ok` and `Err` types of a function's declared return type, so
/// generated code can name them even behind a `type Result<T> = ...` alias.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `Result`",
    label = "expected `Result<T, E>`",
    note = "an `#[idempotent]` function returns `Result<T, E>` (or an alias of it)"
)]
pub trait IsResult: Sized {
    /// The `Ok` type.
    type Ok;
    /// The `Err` type.
    type Err;
    /// As a plain `Result`.
    fn into_result(self) -> Result<Self::Ok, Self::Err>;
    /// Back from a plain `Result`.
    fn from_result(r: Result<Self::Ok, Self::Err>) -> Self;
}
// Not recommended: a type that is not a `Result` gets the message above, not
// a pointer at this impl in idem's sources.
#[diagnostic::do_not_recommend]
impl<T, E> IsResult for Result<T, E> {
    type Ok = T;
    type Err = E;
    fn into_result(self) -> Self {
        self
    }
    fn from_result(r: Self) -> Self {
        r
    }
}

/// The check an `#[idempotent]` expansion makes first, at your return type:
/// [`Returns`], as a projection (`<R as IdempotentResult>::Out`) so that a type
/// that fails is reported there with the failing part's message ([`Storable`],
/// [`IdemErrorInto`], [`IsResult`]), before any runtime function is named.
pub trait IdempotentResult {
    /// Always `()`.
    type Out;
}

impl<R: IsResult<Ok: Storable, Err: IdemErrorInto>> IdempotentResult for R {
    type Out = ();
}
