//! The Redis store family: single node, cluster, TLS, scripts, versions, faults.

#[cfg(feature = "redis")]
pub mod cluster;
#[cfg(feature = "redis")]
pub mod costs;
#[cfg(all(feature = "redis", feature = "sqlite"))]
pub mod failover;
#[cfg(all(feature = "redis", feature = "sqlite"))]
pub mod faults;
#[cfg(feature = "redis")]
pub mod native;
#[cfg(feature = "redis")]
pub mod procs;
#[cfg(feature = "redis")]
pub mod script_calls;
#[cfg(all(feature = "redis", feature = "sqlite"))]
pub mod stalls;
#[cfg(feature = "redis")]
pub mod store;
#[cfg(feature = "redis-tls")]
pub mod tls;
#[cfg(feature = "redis")]
pub mod versions;
