//! The shop example served and driven: HTTP, browser, stock, limits, load.

#[cfg(all(feature = "axum", feature = "sqlite"))]
pub mod browser;
#[cfg(all(
    feature = "axum",
    feature = "sqlite",
    feature = "redis",
    feature = "postgres"
))]
pub mod demo_twice;
#[cfg(all(feature = "axum", feature = "sqlite"))]
pub mod errors;
#[cfg(all(feature = "axum", feature = "sqlite"))]
pub mod http;
#[cfg(all(feature = "axum", feature = "sqlite"))]
pub mod limits;
#[cfg(all(feature = "axum", feature = "sqlite", feature = "redis"))]
pub mod load;
#[cfg(all(feature = "axum", feature = "sqlite"))]
pub mod stock;
#[cfg(all(feature = "axum", feature = "sqlite"))]
pub mod support;
