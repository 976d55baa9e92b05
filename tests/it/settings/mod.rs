//! Run-time settings, configuration sources, extreme values and start-up errors.

pub mod disabled;
#[cfg(all(feature = "postgres", feature = "rabbitmq"))]
pub mod extremes;
#[cfg(feature = "axum")]
pub mod http;
pub mod runtime;
#[cfg(all(feature = "redis", feature = "postgres"))]
pub mod startup_errors;
