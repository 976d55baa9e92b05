//! The relay: claims batches of due messages and publishes them, a few
//! batches in flight at once (`pipeline.rs`), each batch's verdicts recorded
//! per message (`round.rs`), over one outbox table and one broker, until
//! shutdown.
//!
//! Several relays, in one process or many, share a table: a claim takes due
//! rows and moves them one lease ahead in a short transaction that skips rows
//! another relay is claiming (`FOR UPDATE SKIP LOCKED`; SQLite serialises
//! claims with `BEGIN IMMEDIATE`), so no two relays hold one message in the
//! same round. A relay that dies holding messages delays them by one lease;
//! the next claim publishes them again, under the same message id.
//!
//! The database operations run through the execution layer (the operation
//! timeout, the circuit breaker, same-owner retries, `idem_store_seconds` with
//! `op="outbox_claim"` and so on); the broker has a breaker of its own (the
//! execution layer's type), so an unreachable broker makes the relay back off
//! instead of claiming batches it cannot publish.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::MessageId;
use super::publish::Publisher;
use crate::exec::{Breaker, Exec};
use crate::store::sql::SqlStore;

/// The retention under which [`Relay::new`] warns: the default `ttl` of an
/// idempotent request, the usual longest time a business transaction is
/// retried after its first attempt.
pub const MIN_RETENTION: Duration = Duration::from_secs(86_400);

/// A message given up on: what the park hook receives.
#[derive(Debug, Clone)]
pub struct Parked {
    /// Its id.
    pub id: MessageId,
    /// Its topic.
    pub topic: String,
    /// Its business id.
    pub business_id: String,
    /// Failed publishes, the last one included.
    pub attempts: u32,
    /// The broker's last refusal.
    pub error: String,
}

/// Called once per parked message, by the relay that parked it.
pub type ParkHook = Arc<dyn Fn(&Parked) + Send + Sync>;

/// Called with the ids of a batch the broker confirmed, before they are marked
/// sent: a fault-injection point (tests stop the process here to prove that
/// the republished messages are deduplicated). Not for business logic.
pub type AfterConfirmHook = Arc<dyn Fn(&[MessageId]) + Send + Sync>;

/// How a relay runs.
#[derive(Clone)]
pub struct RelayOptions {
    /// The relay's name, for logs.
    pub name: String,
    /// Messages claimed per round. Default 200.
    pub batch: usize,
    /// How long a claim holds its messages: a relay that dies mid-round delays
    /// them this long. Must exceed a round's publish time. Default 30 s.
    pub lease: Duration,
    /// Batches published at once: the next claim and publish overlap the
    /// confirmations of the ones before. Default 3.
    pub in_flight: usize,
    /// First pause when nothing is due, doubled while nothing is due up to
    /// `idle_max`. On PostgreSQL the relay also wakes on every commit that
    /// enqueued a message (`LISTEN`/`NOTIFY`), so these pauses are only its
    /// fallback. Default 100 ms.
    pub idle_poll: Duration,
    /// Longest pause when nothing is due. Default 1 s.
    pub idle_max: Duration,
    /// Wake on commit on PostgreSQL (`LISTEN` on one pooled connection, held
    /// for the relay's life). Default on.
    pub wake_on_commit: bool,
    /// Failed publishes before a message is parked. Default 8.
    pub max_attempts: u32,
    /// First pause before a failed message is due again, doubled per attempt
    /// up to `retry_max`, jittered (between half and all of it). Default 200 ms.
    pub retry_min: Duration,
    /// Longest retry pause. Default 60 s.
    pub retry_max: Duration,
    /// How long a sent message stays before `purge_expired` may delete it.
    /// Its row is what keeps a late retry of the business transaction from
    /// enqueueing the message again: keep it above the longest time such a
    /// retry can come ([`MIN_RETENTION`] or more; the relay warns below it).
    /// Default 7 days.
    pub retention: Duration,
    /// Budget of one batch's publish and confirmations. Default 10 s.
    pub publish_timeout: Duration,
    /// Budget of one database operation. Default 5 s.
    pub op_timeout: Duration,
    /// Consecutive failures that open a breaker (database, broker). Default 5.
    pub breaker_threshold: u32,
    /// How long an open breaker refuses. Default 1 s.
    pub breaker_cooldown: Duration,
    /// How often the gauges are read (pending, oldest age, parked). Default 5 s.
    pub stats_every: Duration,
    /// Called for each parked message.
    pub on_park: Option<ParkHook>,
    /// See [`AfterConfirmHook`].
    pub after_confirm: Option<AfterConfirmHook>,
    /// Live counters (clone the `Arc` to watch them).
    pub counters: Arc<RelayCounters>,
}

impl std::fmt::Debug for RelayOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayOptions")
            .field("name", &self.name)
            .field("batch", &self.batch)
            .field("in_flight", &self.in_flight)
            .field("lease", &self.lease)
            .field("max_attempts", &self.max_attempts)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl RelayOptions {
    /// The defaults for a relay called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        RelayOptions {
            name: name.into(),
            batch: 200,
            lease: Duration::from_secs(30),
            in_flight: 3,
            idle_poll: Duration::from_millis(100),
            idle_max: Duration::from_secs(1),
            wake_on_commit: true,
            max_attempts: 8,
            retry_min: Duration::from_millis(200),
            retry_max: Duration::from_secs(60),
            retention: crate::consume::DEFAULT_RETENTION,
            publish_timeout: Duration::from_secs(10),
            op_timeout: Duration::from_secs(5),
            breaker_threshold: 5,
            breaker_cooldown: Duration::from_secs(1),
            stats_every: Duration::from_secs(5),
            on_park: None,
            after_confirm: None,
            counters: Arc::default(),
        }
    }
}

/// What a relay did so far.
#[derive(Debug, Default)]
pub struct RelayCounters {
    /// Messages claimed (a message claimed again after a failure counts again).
    pub claimed: AtomicU64,
    /// Messages the broker confirmed.
    pub published: AtomicU64,
    /// Confirmed messages the broker said it had already (NATS).
    pub duplicates: AtomicU64,
    /// Confirmed messages marked sent.
    pub marked: AtomicU64,
    /// Publishes the broker refused (each is rescheduled or parked).
    pub refused: AtomicU64,
    /// Publishes the broker refused, rescheduled.
    pub retried: AtomicU64,
    /// Messages parked by this relay.
    pub parked: AtomicU64,
    /// Batches (or parts of one) given back because the broker did not
    /// answer for them.
    pub broker_down: AtomicU64,
    /// Claims that took something (one batch each).
    pub rounds: AtomicU64,
}

impl RelayCounters {
    /// Reads one counter.
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

pub(super) fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// A relay over `store`'s outbox table (see the module docs of
/// [`crate::outbox`]).
pub struct Relay {
    pub(super) store: SqlStore,
    pub(super) exec: Arc<Exec>,
    pub(super) broker: Breaker,
    pub(super) publisher: Box<dyn Publisher>,
    pub(super) opts: RelayOptions,
    /// This relay's id: the first half of each of its claims' owners.
    pub(super) id: [u8; 8],
    /// Claims so far: the second half of the next claim's owner.
    pub(super) claims: AtomicU64,
    pub(super) gauges: super::gauges::Gauges,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("table", &self.store.tables().outbox_name())
            .field("broker", &self.publisher.broker())
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl Relay {
    /// A relay of the outbox table of `store` (`store.tables().outbox_name()`,
    /// in the store's database: the business database the producers enqueue
    /// in) to `publisher`.
    pub fn new(store: SqlStore, publisher: impl Publisher, opts: RelayOptions) -> Relay {
        let exec = Exec::new(
            Arc::new(store.clone()),
            opts.op_timeout,
            Breaker::new(opts.breaker_threshold, opts.breaker_cooldown),
        );
        let gauges = super::gauges::Gauges::new(store.tables().outbox_name(), publisher.broker());
        if opts.retention < MIN_RETENTION {
            tracing::warn!(relay = %opts.name, retention = ?opts.retention, floor = ?MIN_RETENTION,
                "idem: outbox retention below 24 h: a business transaction retried after its sent \
                 message was purged enqueues it again (see the outbox docs' retention rule)");
        }
        Relay {
            exec,
            broker: Breaker::new(opts.breaker_threshold, opts.breaker_cooldown),
            publisher: Box::new(publisher),
            id: uuid::Uuid::new_v4().as_u64_pair().0.to_be_bytes(),
            claims: AtomicU64::new(0),
            gauges,
            store,
            opts,
        }
    }

    /// The counters.
    pub fn counters(&self) -> &Arc<RelayCounters> {
        &self.opts.counters
    }

    /// A new claim's owner: this relay's id and the claim's number.
    pub(super) fn claim_owner(&self) -> [u8; 16] {
        let n = self.claims.fetch_add(1, Ordering::Relaxed);
        let mut o = [0; 16];
        o[..8].copy_from_slice(&self.id);
        o[8..].copy_from_slice(&n.to_be_bytes());
        o
    }

    /// Reads and records the gauges; failures are logged.
    pub(super) async fn read_gauges(&self) {
        let key = self.store.tables().outbox_name();
        let r = self
            .exec
            .op(crate::observe::Op::OutboxStats, key, || {
                Box::pin(self.store.outbox_counts())
            })
            .await;
        match r {
            Ok(c) => self.gauges.set(c),
            Err(e) => tracing::debug!(error = %e, "idem: reading the outbox gauges failed"),
        }
        self.gauges.read_lag(&self.store, &self.exec).await;
    }
}
