//! One-time tokens on every store, and the SQL table's own cases.

pub mod cycle;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod engine;
pub mod lapsed;
pub mod sql;
pub mod stores;
