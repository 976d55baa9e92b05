//! Shared test helpers.

#[cfg(feature = "redis")]
pub(crate) mod redis_server;
