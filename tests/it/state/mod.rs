//! State transitions: compare-and-set, conflicts and the state machine derive.

pub mod cas;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod conflicts;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod engine;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod machine;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod order;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod savepoint_modes;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod statements;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod support;
