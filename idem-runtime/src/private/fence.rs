//! `FenceCell`: how a body that declared an `idem::Fence` parameter gets the
//! claim's fence.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::fence::Fence;

/// Carries the claim's fence into a body that declared an `idem::Fence` parameter.
#[derive(Debug, Default)]
pub struct FenceCell(AtomicU64);

impl FenceCell {
    /// An empty cell.
    pub const fn new() -> Self {
        FenceCell(AtomicU64::new(0))
    }
    /// The fence of the current claim (`Fence::NONE` before the claim).
    pub fn get(&self) -> Fence {
        Fence::new(self.0.load(Ordering::Acquire))
    }
    /// What the body's `idem::Fence` parameter is rebound to: the claim's fence
    /// (the caller passes `Fence::NONE`; the argument is taken so it counts as used).
    pub fn take(&self, _passed: Fence) -> Fence {
        self.get()
    }
    pub(super) fn set(&self, f: Fence) {
        self.0.store(f.get(), Ordering::Release);
    }
}
