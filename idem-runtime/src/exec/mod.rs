//! The execution layer: everything between a technique and the store that is not
//! the technique's own protocol.
//!
//! - [`op`](Exec::op): one store operation under the circuit breaker, the
//!   operation timeout and same-owner retries, timed for the metrics;
//! - [`claim`]: THE claim engine, the one claim-or-wait primitive
//!   ([`Exec::acquire`]): queue turn, wait with wake-ups, armed undo on drop,
//!   one op-budget rule; the guard, the lock and tokens call it;
//! - [`lease`]: a held claim kept alive by a watchdog (renewal every `lease / 3`
//!   counted from when the last claim or renewal was *sent*, up to `max_hold`), and
//!   the waiter a busy key's caller waits with;
//! - [`finish`]: ending a held claim in a way that survives the caller's drop
//!   (complete, release, token consume, token give-back, lock release: one
//!   [`Finish`]), and undoing a claim whose body never started;
//! - [`local`]: wake-ups of same-process waiters when a local holder finishes,
//!   and the in-process claim of the degraded path.
//!
//! It knows stores, owners and fences, never the `Idem` handle, keys' meaning or
//! business errors: the guard, and later the lock, token and consumer techniques,
//! compose these pieces. The handle owns one `Exec` behind an `Arc`, so detached
//! tasks (a finish that outlives its caller) can hold it.

use std::sync::Arc;
use std::time::Duration;

use crate::observe::StoreOpKeys;
use crate::store::Store;

pub(crate) mod breaker;
mod claim;
mod finish;
mod jitter;
mod lease;
mod local;
mod op;

pub(crate) use breaker::Breaker;
pub(crate) use claim::{Acquired, Answer, ClaimSpec};
pub(crate) use finish::{Finish, Kind};
pub(crate) use lease::{Held, Liveness, Waiter};
pub(crate) use local::Inflight;

/// The store plus the machinery every technique runs its operations through.
pub(crate) struct Exec {
    pub(crate) store: Arc<dyn Store>,
    /// Budget of one operation including its retries.
    pub(crate) op_timeout: Duration,
    pub(crate) breaker: Breaker,
    store_ops: StoreOpKeys,
    local: local::Local,
    /// Pauses of retries and remote waiters, desynchronised.
    pub(crate) jitter: jitter::Jitter,
}

impl std::fmt::Debug for Exec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exec")
            .field("store", &self.store.name())
            .field("op_timeout", &self.op_timeout)
            .finish_non_exhaustive()
    }
}

impl Exec {
    pub(crate) fn new(store: Arc<dyn Store>, op_timeout: Duration, breaker: Breaker) -> Arc<Self> {
        let store_ops = StoreOpKeys::new(store.name());
        Arc::new(Exec {
            store,
            op_timeout,
            breaker,
            store_ops,
            local: local::Local::default(),
            jitter: jitter::Jitter::default(),
        })
    }
}
