//! What every macro shares. A macro is a folder with an option table
//! (`args.rs`), a `validate.rs` and a `codegen.rs` that call into these:
//!
//! - [`args`]: the option-parsing kit (table, `set_once`, typed readers,
//!   did-you-mean), every message naming the macro;
//! - [`item`] and [`params`]: the function (body kept as tokens) and its
//!   parameters (lookup, did-you-mean, `self`, the `idem::Fence` parameter);
//! - [`template`] and [`key`]: the key template grammar, and a template checked
//!   against the parameters;
//! - [`duration`], [`defaults`]: durations, and the runtime defaults options
//!   are judged against;
//! - [`errors`]: collected, spanned errors, and the did-you-mean;
//! - [`codegen`]: the `KeyBuf` chain, the fake return, the fence binding, the
//!   fallback that keeps the function beside its errors;
//! - [`wrapped_body`]: the body's type line, and that fallback, for
//!   attributes whose body returns less than the signature
//!   (`#[state_transition]`, `#[consume_once]`).

pub(crate) mod args;
pub(crate) mod codegen;
pub(crate) mod defaults;
pub(crate) mod duration;
pub(crate) mod errors;
pub(crate) mod item;
pub(crate) mod key;
pub(crate) mod params;
pub(crate) mod template;
pub(crate) mod wrapped_body;
