//! Redis and Redis Cluster record stores (feature `redis`).
//!
//! # Cost
//! One record is one Redis string holding a packed value (state, owner, fence,
//! fingerprint, result) with a `PX` expiry: about 100 bytes of Redis memory beyond
//! the key and the result (103 measured with `MEMORY USAGE` for a 41-byte key and a
//! 200-byte result, Redis 7.0, jemalloc). A duplicate of a finished call costs one round trip (the
//! claim returns the stored result); a first call costs two (claim, then
//! complete). Complete, release, renew and inspect are each one `EVALSHA` of a
//! small Lua script on one key, so they are atomic and touch one cluster slot.
//!
//! The claim is one of two commands. A caller that reads its fence (an
//! `idem::Fence` parameter, [`Guard::run_fenced`](crate::Guard::run_fenced))
//! runs the claim script, which stamps the server clock as fence. A caller that
//! does not (an `#[idempotent]` function without a fence parameter, the guard's
//! default [`Guard::run`](crate::Guard::run)) sends one native
//! `SET <record> <claim> NX PX <lease> GET`: it takes an absent key or returns
//! the record as it is, at about half the script's server cost (Redis runs
//! scripts and commands on one thread; see `BENCHMARKS.md`). Only
//! when another owner holds the key does it ask the script for the holder's
//! remaining lease (a second round trip, before waiting).
//!
//! # Keys
//! A record lives at `<prefix>{<idem key>}`: the whole idem key is the Redis
//! Cluster hash tag, so everything idem keeps for a key shares a slot. Key parts are
//! escaped by [`crate::key`] (no braces from request data); the optional prefix may not
//! contain braces. A scene text with a `}` (the non-macro API does not escape scenes)
//! only narrows the hash tag: the record is still one key.
//!
//! # Fences
//! A fence is the Redis server clock (`TIME`) in microseconds at the moment the
//! claim wrote the key. A claim writes only an absent key, so every earlier claim of
//! the key was written at an earlier server time and has a smaller fence; a retried
//! claim by the same owner (lost reply) gets its own fence back. This holds across
//! record expiry, `forget`, `FLUSHALL`, restarts and failover, under one assumption:
//! **the clocks of the Redis servers do not step backwards** by more than the time
//! between two claims of one key (at least a network round trip; a lease after a
//! crash). Run NTP in slewing mode on Redis hosts and keep replicas' clocks in sync
//! with their masters. The fence is what protects your data when a lease lapsed
//! while its body still ran: write it with the business row and guard updates with
//! `WHERE fence <= $fence`.
//!
//! # What a failover or data loss can lose
//! Redis replicates asynchronously. A record acknowledged by a master that fails
//! before its replica received it is lost, and so is everything on a restarted
//! server without persistence, a `FLUSHALL`, or an evicted key (see
//! [`Store::verify`], which warns about eviction policies). A lost record means a
//! later duplicate runs the body again; a lost *in-progress* claim means a
//! concurrent duplicate may run the body while the first still does. That is why a Redis-backed guard should have a
//! database backstop (a unique constraint on the business row, `backstop = ...`)
//! for calls that must never run twice: the record store intercepts almost every
//! duplicate cheaply, the constraint catches the rest. Fences stay monotonic through
//! all of this (see above), so fenced writes stay safe.
//!
//! # Timeouts
//! The deadline of an operation is the guard's: its operation budget (the
//! handle's `op_timeout`, default 1 s, at most a third of the call's lease) bounds
//! each claim, complete, release and renew including their retries, and the guard
//! retries within it. The store's own response timeout is only a backstop for a
//! connection nobody cuts (direct [`Store`] calls, [`RedisStore::connection`]):
//! it defaults to 10 s, the longest budget a call with the default 30 s lease can
//! have, so it never cuts an attempt shorter than the guard would (a shorter one
//! would fail every attempt of a loaded but healthy server, whatever budget the
//! caller had). If you give calls longer
//! budgets (`op_timeout` above 10 s with leases above 30 s), raise it to match.
//! A hung server (`SIGSTOP`, a stalled network) still turns into
//! [`StoreError::Unavailable`] (and `Error::StoreUnavailable`) within the
//! operation budget: the guard drops the attempt at its deadline.
//!
//! Connecting has its own bound: 1 s to open a connection (`connect_timeout`), and
//! [`RedisStoreBuilder::connect`] gives up after four times that (opening plus
//! loading the scripts). The single-node store reconnects in the background; a
//! command in flight when the connection broke fails and the guard retries it with
//! the same owner (every script is idempotent per owner). A claim that timed out
//! may still apply when a hung server wakes: the guard that gave up on it sends an
//! owner-checked release in the background (even when that failure opened the
//! circuit breaker: the claim was sent), retried while the breaker is closed
//! until the claim's lease would have lapsed, so the key is free again once the
//! server answers. A later caller takes over a key whose release never landed
//! once its lease lapses, with a larger fence.
//!
//! # Bursts
//! A flash sale sends thousands of calls at once, most of them duplicates. The
//! store spreads its commands over a few multiplexed connections
//! ([`RedisStoreBuilder::connections`], default 1) and lets at most
//! [`max_in_flight`](RedisStoreBuilder::max_in_flight) commands (default 128)
//! be in flight on each; further operations wait for a turn in the store's
//! [`SendQueue`](crate::store::SendQueue), in arrival order. That wait is the
//! client's own backlog, not the server's health: a claim may queue for what is
//! left of its caller's `wait`, the operation timeout starts only once its
//! command is sent, and a caller that gets no turn in time fails with
//! `Error::Overloaded` (never counted by the circuit breaker). A queue that
//! stops moving (no answer to anyone for two operation budgets) is still an
//! outage. Operations on a claim already held (complete, release, renew) skip
//! the queue, so admitted work always finishes. The wait is measured as
//! `idem_store_queue_seconds{store,op}`, give-ups as
//! `idem_store_overloaded_total{store,op}`.
//!
//! Requires Redis 5 or newer (scripts that read `TIME` and then write need
//! effect replication, the default since Redis 5). The native claim needs
//! Redis 7.0: below it (read from `INFO` when the store connects, or learnt
//! from the server's first refusal of the command on a store built lazily)
//! claims without a fence run the claim script instead, and
//! [`Store::verify`] says so in a warning naming the version.
//!
//! # Error replies
//! An error the server *answers* with (`ERR`, a script error, `NOPERM`,
//! `OOM`, ...) is its verdict on the command, not an outage: the call fails
//! with `Error::StoreUnavailable` carrying the server's reason, but it is not
//! retried and never counts towards opening the circuit breaker, so one
//! refused command cannot fail every other call fast. `LOADING`, `BUSY`,
//! `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN` and `READONLY` (a server that is
//! starting, busy, or in a failover) count as outages, like I/O errors and
//! timeouts.

mod builder;
mod census;
mod cluster;
mod codec;
mod conn;
mod durability;
mod errors;
mod eval;
mod from;
mod native;
mod operator;
mod ops;
mod scripts;
mod sentinel;
mod sentinel_spec;
mod server;
mod shared;
mod state_scripts;
mod token_scripts;

use std::time::Duration;

use std::sync::Arc;

use redis::aio::ConnectionManager;

use self::codec::KeyLayout;
use self::conn::Conns;
use self::durability::Replication;
use self::native::NativeClaim;
use self::sentinel::{Primary, Route};
use super::{
    BoxFuture, Claim, ClaimRequest, Owned, Owner, RecordState, Store, StoreError, Warning,
};

pub(crate) use ops::record_ops;

/// The redis-rs crate this store is built on, for commands of your own on
/// [`RedisStore::connection`] and [`RedisClusterStore::connection`].
pub use ::redis;
pub use builder::RedisStoreBuilder;
pub use cluster::{RedisClusterStore, RedisClusterStoreBuilder};
pub use conn::{DEFAULT_CONNECTIONS, DEFAULT_IN_FLIGHT};
pub use durability::Durability;

/// The Lua sources of the claim, complete and state check-and-set scripts, so the overhead benchmark
/// can send the very same scripts by hand. Not part of the API.
#[doc(hidden)]
#[cfg(feature = "bench")]
pub mod __bench {
    /// The claim script (`KEYS[1]` record; `ARGV` owner, fingerprint, lease ms).
    pub const CLAIM: &str = super::scripts::CLAIM;
    /// The complete script (`KEYS[1]` record; `ARGV` owner, payload, ttl ms).
    pub const COMPLETE: &str = super::scripts::COMPLETE;
    /// The state check-and-set script (`KEYS[1]` state, `KEYS[2]` its `:by`
    /// hash; `ARGV` mode, expected, new, ttl ms, owner).
    pub const STATE_CAS: &str = super::state_scripts::CAS;
}

/// Default time allowed to open a connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// Default time allowed for one response: the longest operation budget of a call
/// with the default lease (`DEFAULT_LEASE / LEASE_PER_OP` = 10 s), so the client
/// never cuts an attempt the guard would still wait for (see [Timeouts](self#timeouts)).
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);
/// [`RedisStoreBuilder::connect`] waits at most this many connect timeouts for
/// the connection and the script loading together.
const CONNECT_BUDGET_FACTOR: u32 = 4;

/// A record store on one Redis server (or a primary behind a stable address),
/// over one multiplexed, self-reconnecting connection.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use idem::{Idem, store::redis::RedisStore};
/// let store = RedisStore::builder("redis://127.0.0.1:6379")
///     .prefix("idem:")
///     .response_timeout(std::time::Duration::from_millis(300))
///     .connect()
///     .await?;
/// let idem = Idem::builder().store(store).namespace("shop").build()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisStore {
    conns: Conns<Route>,
    layout: KeyLayout,
    native: NativeClaim,
    replication: Arc<Replication>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("layout", &self.layout)
            .field("connections", &self.conns.len())
            .field("in_flight_limit", &self.conns.queue().limit())
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects with the defaults (no prefix, 1 s connect, 10 s response).
    pub async fn connect(url: &str) -> Result<RedisStore, StoreError> {
        Self::builder(url).connect().await
    }

    /// A builder for `url` (`redis://[user:pass@]host:port[/db]`; `rediss://` with
    /// feature `redis-tls`, system roots: see [`from_client`](Self::from_client)).
    pub fn builder(url: impl Into<String>) -> RedisStoreBuilder {
        RedisStoreBuilder {
            url: url.into(),
            shared: shared::Shared::default(),
            reconnect_retries: 2,
            sentinel: None,
        }
    }

    /// A builder for a primary found through Redis Sentinel: `master` is the
    /// name the sentinels monitor it under, `sentinels` their addresses
    /// (`host:port`). The same as `builder("redis+sentinel://host:port,…/master")`.
    /// The store follows a failover to the new primary by itself.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), idem::store::StoreError> {
    /// use idem::store::redis::RedisStore;
    /// let store = RedisStore::sentinel("mymaster", ["10.0.0.1:26379", "10.0.0.2:26379"])
    ///     .connect()
    ///     .await?;
    /// # drop(store); Ok(()) }
    /// ```
    pub fn sentinel<S: Into<String>>(
        master: impl Into<String>,
        sentinels: impl IntoIterator<Item = S>,
    ) -> RedisStoreBuilder {
        let sentinels: Vec<String> = sentinels.into_iter().map(Into::into).collect();
        let master = master.into();
        let url = format!("{}{}/{master}", sentinel::SCHEME, sentinels.join(","));
        let mut b = Self::builder(url);
        b.sentinel = Some(sentinel::SentinelSpec {
            master,
            sentinels: sentinels.iter().map(|h| format!("redis://{h}")).collect(),
            username: None,
            password: None,
            db: 0,
        });
        b
    }

    /// The Redis key holding `key`'s record (for operators and tests).
    pub fn record_key(&self, key: &str) -> Vec<u8> {
        self.layout.record_key(key)
    }

    /// One of the store's connections (the next in turn), for commands of your
    /// own. They do not take turns in the store's send queue. Behind Sentinel,
    /// the connection to the primary of the moment: ask again after a failover.
    pub fn connection(&self) -> ConnectionManager {
        self.conns.get().manager()
    }

    /// The connection for one store operation.
    fn con(&self) -> Primary {
        self.conns.get().open()
    }
}

token_scripts::token_store!(RedisStore);
state_scripts::state_store!(RedisStore);

impl Store for RedisStore {
    fn name(&self) -> &'static str {
        "redis"
    }

    record_ops!();

    fn tokens(&self) -> Option<&dyn crate::store::token::TokenStore> {
        Some(self)
    }

    fn states(&self) -> Option<&dyn crate::store::state::StateStore> {
        Some(self)
    }

    fn send_queue(&self) -> Option<&crate::store::SendQueue> {
        Some(self.conns.queue())
    }

    /// `SCAN`s the server.
    fn census<'a>(
        &'a self,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<crate::store::Census, StoreError>> {
        Box::pin(async move {
            let pattern = census::pattern(&self.layout, namespace);
            let found = self.scan_all(&pattern).await?;
            Ok(census::census(namespace, &found))
        })
    }

    operator::operator_ops!();

    fn verify(&self) -> BoxFuture<'_, Result<Vec<Warning>, StoreError>> {
        let mut con = self.con();
        Box::pin(async move {
            let info: String = redis::cmd("INFO")
                .arg("server")
                .query_async(&mut con)
                .await
                .map_err(scripts::map_err)?;
            let mut warnings: Vec<Warning> = server::check_version(&info)?.into_iter().collect();
            let cluster: String = redis::cmd("INFO")
                .arg("cluster")
                .query_async(&mut con)
                .await
                .map_err(scripts::map_err)?;
            if cluster.contains("cluster_enabled:1") {
                return Err(StoreError::Config(
                    "this Redis is a cluster node: records on other nodes' slots would fail \
                     with MOVED; use RedisClusterStore"
                        .into(),
                ));
            }
            let policy: Result<redis::Value, _> = redis::cmd("CONFIG")
                .arg("GET")
                .arg("maxmemory-policy")
                .query_async(&mut con)
                .await;
            warnings.extend(match policy {
                Ok(v) => {
                    let mut s = Vec::new();
                    server::strings(&v, &mut s);
                    server::policy_warnings(&s)
                }
                Err(e) => vec![cannot_read_policy(&e)],
            });
            Ok(warnings)
        })
    }
}

fn cannot_read_policy(e: &redis::RedisError) -> Warning {
    Warning(format!(
        "could not read redis maxmemory-policy ({e}); make sure it is `noeviction`, \
         or evicted records will silently run duplicates again"
    ))
}

impl RedisStore {
    /// The record keys matching `pattern` on the server, with their states
    /// (see `census.rs`).
    async fn scan_all(
        &self,
        pattern: &str,
    ) -> Result<Vec<(String, crate::store::Counted)>, StoreError> {
        let mut con = self.con();
        let mut found = Vec::new();
        census::scan_node(&mut con, &self.layout, pattern, &mut found).await?;
        Ok(found)
    }
}
