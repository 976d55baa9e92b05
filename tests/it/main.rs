//! Integration tests: one binary, one module per area.

mod support;

#[cfg(all(feature = "redis", feature = "sqlite"))]
mod redis_faults;
#[cfg(feature = "redis")]
mod redis_procs;
#[cfg(feature = "redis")]
mod redis_store;
