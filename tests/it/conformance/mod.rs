//! The store contract and the guard's rules (DESIGN §3), written once and run on every store.

pub mod limits;
pub mod memory;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod sql;
pub mod suite;
