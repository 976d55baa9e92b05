//! The constraint catalog lives beside the stores (`store::catalog`): stores
//! implement it and the backstop registry only asks it, so the arrow points down.

pub use crate::store::catalog::{ConstraintCatalog, ConstraintDef, Engine};
