//! The trait bounds an expansion checks, each once and at the user's own type,
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

impl<T: Storable, E: IdemErrorInto> Returns for Result<T, E> {}

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
