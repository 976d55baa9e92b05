//! # idem — idempotent service operations
//!
//! A request executed once or a hundred times leaves the same business result.
//! See the README for the guide; this crate re-exports the macros and the runtime.

pub use idem_macros::idempotent;
pub use idem_runtime::*;

#[doc(hidden)]
pub use idem_runtime::__private;
