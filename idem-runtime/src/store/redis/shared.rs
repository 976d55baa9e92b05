//! The settings the single-node and the Cluster builders share, with their
//! six setters written once ([`shared_setters!`]): the key prefix, the two
//! timeouts, the connection pool and the durability. Each builder adds its own (the URL or
//! seed nodes, its client's retry knob).

use std::time::Duration;

use super::conn::PoolSize;
use super::durability::Durability;
use super::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT};

/// What both Redis builders configure the same way.
#[derive(Debug, Clone)]
pub(super) struct Shared {
    pub(super) prefix: String,
    pub(super) connect_timeout: Duration,
    pub(super) response_timeout: Duration,
    pub(super) pool: PoolSize,
    pub(super) durability: Durability,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            prefix: String::new(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            pool: PoolSize::default(),
            durability: Durability::Primary,
        }
    }
}

/// The six shared setters, on a builder with a `shared: Shared` field. A
/// macro so both builders keep their own inherent methods (their public API)
/// with one body and one doc each.
macro_rules! shared_setters {
    () => {
        /// Text put in front of every record key (before the `{...}` hash tag), for
        /// sharing a Redis with other applications. No braces.
        pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
            self.shared.prefix = prefix.into();
            self
        }

        /// Time allowed to open a connection (to one node, for a cluster; default 1 s).
        pub fn connect_timeout(mut self, t: std::time::Duration) -> Self {
            // Saturated, as every timeout here: no duration may panic in the
            // client's `Instant` arithmetic.
            self.shared.connect_timeout = t.min(crate::policy::MAX_DURATION);
            self
        }

        /// Time allowed for one response (default 10 s). The guard's operation
        /// budget is the deadline that matters (see [Timeouts](super#timeouts)); keep
        /// this at least as long as the longest budget your calls get, or a slow but
        /// healthy server fails attempts the guard would have waited for.
        pub fn response_timeout(mut self, t: std::time::Duration) -> Self {
            self.shared.response_timeout = t.min(crate::policy::MAX_DURATION);
            self
        }

        /// Multiplexed connections the store spreads its commands over (default
        /// 1; a cluster connection reaches every master over one multiplexed
        /// connection per node). Redis runs commands one at a time, so more only
        /// help the client side (encoding, decoding) on more cores.
        pub fn connections(mut self, n: usize) -> Self {
            self.shared.pool.connections = n;
            self
        }

        /// Whether claims and completes wait for replicas (default
        /// [`Durability::Primary`](super::Durability::Primary): they do not).
        /// See [`Durability`](super::Durability) for what each setting promises.
        pub fn durability(mut self, d: super::Durability) -> Self {
            self.shared.durability = d;
            self
        }

        /// Commands in flight on one connection before further operations wait for
        /// a turn in the store's send queue (default 128). Time in that queue is
        /// bounded by the caller's `wait`, not by the operation timeout, and never
        /// counts as an outage (see [Bursts](super#bursts)).
        pub fn max_in_flight(mut self, n: usize) -> Self {
            self.shared.pool.in_flight = n;
            self
        }
    };
}
pub(super) use shared_setters;
