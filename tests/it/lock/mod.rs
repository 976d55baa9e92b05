//! The distributed lock, plain and fenced, on every store family.

#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod fenced;
#[cfg(feature = "redis")]
pub mod native;
pub mod stores;
