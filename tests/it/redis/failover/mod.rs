//! Redis with replicas through real failovers: replicated durability, Sentinel
//! discovery, and the duplicate rate of each mode (a harness of test-owned
//! processes: `sentinels.rs`, the load: `drill.rs`).

pub mod cluster;
pub mod drill;
pub mod sentinel;
pub mod sentinels;
pub mod wait;
