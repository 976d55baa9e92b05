//! What a lock's body receives: [`LockGrant`] (`Lock::run`, the lease and
//! its fence) or [`LockLease`] (`Lock::run_unfenced`).

use std::sync::Arc;

use crate::exec::Liveness;
use crate::fence::Fence;

/// The lock as an unfenced body sees it (`Lock::run_unfenced`): whether the
/// lease still holds. It has no fence: the claim that took the lock stamped
/// none (on Redis it is one native `SET … NX PX … GET`), so a body that writes
/// a fence with its rows uses [`Lock::run`](super::Lock::run) and its
/// [`LockGrant`].
///
/// Cheap to clone; pass it to the code that writes.
#[derive(Debug, Clone)]
pub struct LockLease {
    pub(super) live: Arc<Liveness>,
}

impl LockLease {
    /// True while the lease certainly holds: it is within the lease of the last
    /// renewal the store confirmed (counted from when it was sent), and the store
    /// never said another owner took the key. False once renewals failed for a
    /// whole lease, `max_hold` stopped them, or another owner took over; it never
    /// turns true again. A `true` can be stale by the time you write: only a
    /// fenced write ([`LockGrant::fence`]) is safe against that.
    pub fn is_valid(&self) -> bool {
        self.live.holds()
    }
}

/// The lock as a fenced body sees it (`Lock::run`): the fence of this
/// acquisition and whether the lease still holds.
///
/// Cheap to clone; pass it to the code that writes.
#[derive(Debug, Clone)]
pub struct LockGrant {
    pub(super) fence: Fence,
    pub(super) lease: LockLease,
}

impl LockGrant {
    /// The fence of this acquisition: larger than every earlier fenced
    /// acquisition's of this lock key, across lock expiry, `FLUSHALL` and
    /// failover. Write it with the rows the lock protects and guard updates
    /// with `fence <= $fence` (see [`FencedUpdate`](super::FencedUpdate)), so a
    /// holder whose lease lapsed cannot overwrite the work of the holder after
    /// it.
    pub fn fence(&self) -> Fence {
        self.fence
    }

    /// [`LockLease::is_valid`]: true while the lease certainly holds.
    pub fn is_valid(&self) -> bool {
        self.lease.is_valid()
    }

    /// The lease without its fence.
    pub fn lease(&self) -> &LockLease {
        &self.lease
    }
}
