//! [`LockGrant`]: what a lock's body receives.

use std::sync::Arc;

use crate::exec::Liveness;
use crate::fence::Fence;

/// The lock as its body sees it: the fence of this acquisition and whether the
/// lease still holds.
///
/// Cheap to clone; pass it to the code that writes.
#[derive(Debug, Clone)]
pub struct LockGrant {
    pub(super) fence: Fence,
    pub(super) live: Arc<Liveness>,
}

impl LockGrant {
    /// The fence of this acquisition: larger than every earlier acquisition's of
    /// this lock key, across lock expiry, `FLUSHALL` and failover. Write it with
    /// the rows the lock protects and guard updates with `fence <= $fence`
    /// (see [`FencedUpdate`](super::FencedUpdate)), so a holder whose lease lapsed
    /// cannot overwrite the work of the holder after it.
    pub fn fence(&self) -> Fence {
        self.fence
    }

    /// True while the lease certainly holds: it is within the lease of the last
    /// renewal the store confirmed (counted from when it was sent), and the store
    /// never said another owner took the key. False once renewals failed for a
    /// whole lease, `max_hold` stopped them, or another owner took over; it never
    /// turns true again. A `true` can be stale by the time you write: only a
    /// fenced write is safe against that.
    pub fn is_valid(&self) -> bool {
        self.live.holds()
    }
}
