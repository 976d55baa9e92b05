//! The `Idempotency-Key` HTTP layer over real loopback HTTP.

#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod backstop;
pub mod body_reads;
pub mod concurrency;
pub mod headers;
pub mod keep;
pub mod keys;
pub mod macro_route;
pub mod private;
pub mod statuses;
pub mod support;
