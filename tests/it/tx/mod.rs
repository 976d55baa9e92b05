//! The transactional guard and the caller-transaction helpers on the three SQL databases.

#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod engine;
pub mod engine_front;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod guard;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod guard_locks;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod guard_sql;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod helpers;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod helpers_repeats;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod insert_once;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod macro_fn;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod recipes;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod savepoint_modes;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod statements;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod support;
