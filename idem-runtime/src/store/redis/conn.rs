//! The connections of a Redis store: a small pool of multiplexed connections,
//! taken in turn, and the [`SendQueue`] that bounds the commands in flight on
//! them.
//!
//! One multiplexed connection takes any number of commands; under a burst of
//! thousands of simultaneous callers they pile up inside the client, and the
//! last one's answer comes seconds after it was issued although Redis answers
//! each in microseconds. Bounding the commands in flight per connection keeps
//! the wait for an *answer* short and honest (it is what the operation timeout
//! measures) and moves the backlog into the queue, where the execution layer
//! bounds it by the caller's own budget. More connections let the client encode
//! and decode on more cores; Redis itself runs commands one at a time, so a few
//! are enough (measured in BENCHMARKS.md, burst rows).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::store::SendQueue;

/// Default number of multiplexed connections per store (a cluster connection
/// reaches every master). One: on the development machine (two cores shared
/// with Redis) 1, 2 and 4 connections drained 10,000-caller bursts equally
/// within the noise (BENCHMARKS.md, burst rows), and each more connection is
/// one more to open at start-up and to reconnect.
pub const DEFAULT_CONNECTIONS: usize = 1;
/// Default limit of commands in flight on one connection.
pub const DEFAULT_IN_FLIGHT: usize = 128;

/// The pool: `C` is `ConnectionManager` or `ClusterConnection`, both cheap to
/// clone (a handle to one multiplexed connection).
pub(super) struct Conns<C> {
    all: Arc<[C]>,
    next: Arc<AtomicUsize>,
    queue: Arc<SendQueue>,
}

impl<C> Clone for Conns<C> {
    fn clone(&self) -> Self {
        Conns {
            all: Arc::clone(&self.all),
            next: Arc::clone(&self.next),
            queue: Arc::clone(&self.queue),
        }
    }
}

impl<C: Clone> Conns<C> {
    /// `all` (at least one) with at most `in_flight` commands on each.
    pub(super) fn new(all: Vec<C>, in_flight: usize) -> Self {
        debug_assert!(!all.is_empty());
        let limit = all.len().saturating_mul(in_flight.max(1));
        Conns {
            all: all.into(),
            next: Arc::default(),
            queue: Arc::new(SendQueue::new(limit)),
        }
    }

    /// The next connection, round robin: with the queue bounding the total,
    /// each connection carries an even share of the commands in flight. One
    /// connection (the default) skips the shared counter, whose cache line
    /// would otherwise move between the cores on every command.
    pub(super) fn get(&self) -> C {
        if let [only] = &*self.all {
            return only.clone();
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.all.len();
        self.all[i].clone()
    }

    /// The queue in front of them.
    pub(super) fn queue(&self) -> &SendQueue {
        &self.queue
    }

    /// How many connections.
    pub(super) fn len(&self) -> usize {
        self.all.len()
    }
}

/// The pool settings both builders share.
#[derive(Debug, Clone, Copy)]
pub(super) struct PoolSize {
    pub(super) connections: usize,
    pub(super) in_flight: usize,
}

impl Default for PoolSize {
    fn default() -> Self {
        PoolSize {
            connections: DEFAULT_CONNECTIONS,
            in_flight: DEFAULT_IN_FLIGHT,
        }
    }
}

impl PoolSize {
    /// Refuses a zero count (nothing could ever be sent).
    pub(super) fn check(&self) -> Result<(), crate::store::StoreError> {
        if self.connections == 0 || self.in_flight == 0 {
            return Err(crate::store::StoreError::config(format!(
                "redis connections ({}) and in-flight limit ({}) must be at least 1",
                self.connections, self.in_flight
            )));
        }
        Ok(())
    }
}
