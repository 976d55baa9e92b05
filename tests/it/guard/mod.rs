//! The guard itself on the memory store: keys, scenes, fences, safety regressions, bursts.

#[cfg(all(feature = "redis", feature = "sqlite"))]
pub mod burst;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod engine_keys;
pub mod footprint;
pub mod keys;
pub mod safety;
pub mod unanswered_claims;
