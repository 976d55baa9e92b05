//! The store contract and the guard's rules (DESIGN §3), written once and run on every store
//! of the store list (`stores.rs`): `owners` holds the store contract (leases, owners,
//! fences), `calls`, `failures` and `outages` the guard's rules.

pub mod calls;
pub mod failures;
pub mod limits;
pub mod outages;
pub mod owners;
pub mod stores;
pub mod suite;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod tables;
pub mod taken;
