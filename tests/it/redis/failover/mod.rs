//! Redis with replicas through real failovers: replicated durability, Sentinel
//! discovery, and the duplicate rate of each mode (a harness of test-owned
//! processes: `sentinels.rs`, the load: `drill.rs`).

pub mod cluster;
pub mod drill;
pub mod sentinel;
pub mod sentinels;
pub mod wait;

/// The failover drills take turns. Each starts a primary, replicas and
/// sentinels (or a cluster) whose failure detection counts in seconds; several
/// at once on a small machine starve one another into failovers no test asked
/// for, which then lose records no mode could keep.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// This drill's turn, held until the guard drops.
pub(crate) async fn turn() -> tokio::sync::MutexGuard<'static, ()> {
    TURN.lock().await
}
