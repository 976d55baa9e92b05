//! How an idle relay waits: until a pause runs out, a batch of its own
//! finishes, or (PostgreSQL) a transaction that enqueued a message commits.
//!
//! On PostgreSQL `enqueue` sends a `NOTIFY` on the outbox's channel in the
//! business transaction; PostgreSQL delivers it when that transaction
//! commits, and never for one that rolls back. The relay listens on one
//! connection of its pool. A notification lost while that connection
//! reconnects costs only latency: the pauses remain the fallback.

use std::time::Duration;

use tokio::sync::Notify;

use super::relay::Relay;
use crate::consume::ShutdownSignal;

/// The idle wait of one relay.
pub(super) struct Wake {
    #[cfg(feature = "postgres")]
    listener: Option<sqlx::postgres::PgListener>,
}

impl Wake {
    /// Listens for commits where the database can tell (PostgreSQL, with
    /// `wake_on_commit`); elsewhere, or when listening fails, the relay polls.
    #[cfg_attr(not(feature = "postgres"), allow(clippy::unused_async))]
    pub(super) async fn new(relay: &Relay) -> Wake {
        #[cfg(feature = "postgres")]
        {
            let listener = if relay.opts.wake_on_commit {
                match relay.store.outbox_listener().await {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!(relay = %relay.opts.name, error = %e,
                            "idem: cannot listen for outbox commits; polling instead");
                        None
                    }
                }
            } else {
                None
            };
            Wake { listener }
        }
        #[cfg(not(feature = "postgres"))]
        {
            let _ = relay;
            Wake {}
        }
    }

    /// Waits up to `pause`; whether something woke it first (a commit or a
    /// finished batch) rather than the pause running out or `signal`.
    pub(super) async fn wait(
        &mut self,
        pause: Duration,
        done: &Notify,
        signal: &mut ShutdownSignal,
    ) -> bool {
        #[cfg(feature = "postgres")]
        if let Some(l) = self.listener.as_mut() {
            // Notifications that came in while the relay was busy are stale:
            // the claim that just found nothing ran after them.
            while l.next_buffered().is_some() {}
            return tokio::select! {
                n = l.try_recv() => {
                    while l.next_buffered().is_some() {}
                    matches!(n, Ok(Some(_)))
                }
                _ = done.notified() => true,
                _ = tokio::time::sleep(pause) => false,
                _ = signal.triggered() => false,
            };
        }
        tokio::select! {
            _ = done.notified() => true,
            _ = tokio::time::sleep(pause) => false,
            _ = signal.triggered() => false,
        }
    }
}
