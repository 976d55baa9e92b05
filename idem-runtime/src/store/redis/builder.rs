//! [`RedisStoreBuilder`]: the settings of a single-node [`RedisStore`], its
//! connection pool included.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::codec::KeyLayout;
use super::conn::{Conns, PoolSize};
#[cfg(doc)]
use super::conn::{DEFAULT_CONNECTIONS, DEFAULT_IN_FLIGHT};
use super::native::{self, NativeClaim};
use super::{CONNECT_BUDGET_FACTOR, RedisStore, scripts};
use crate::store::StoreError;

/// Configures a [`RedisStore`].
#[derive(Debug, Clone)]
#[must_use]
pub struct RedisStoreBuilder {
    pub(super) url: String,
    pub(super) prefix: String,
    pub(super) connect_timeout: Duration,
    pub(super) response_timeout: Duration,
    pub(super) reconnect_retries: usize,
    pub(super) pool: PoolSize,
}

impl RedisStoreBuilder {
    /// Text put in front of every record key (before the `{...}` hash tag), for
    /// sharing a Redis with other applications. No braces.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Time allowed to open a connection (default 1 s).
    pub fn connect_timeout(mut self, t: Duration) -> Self {
        // Saturated, as every timeout here: no duration may panic in the
        // client's `Instant` arithmetic (issue 24 l).
        self.connect_timeout = t.min(crate::policy::MAX_DURATION);
        self
    }

    /// Time allowed for one response (default 10 s). The guard's operation
    /// budget is the deadline that matters (see [Timeouts](super#timeouts)); keep
    /// this at least as long as the longest budget your calls get, or a slow but
    /// healthy server fails attempts the guard would have waited for.
    pub fn response_timeout(mut self, t: Duration) -> Self {
        self.response_timeout = t.min(crate::policy::MAX_DURATION);
        self
    }

    /// Connection attempts per reconnection before the pending commands fail
    /// (default 2; later commands start a new reconnection).
    pub fn reconnect_retries(mut self, n: usize) -> Self {
        self.reconnect_retries = n;
        self
    }

    /// Multiplexed connections the store spreads its commands over (default
    /// [`DEFAULT_CONNECTIONS`], 1). Redis runs commands one at a time, so more
    /// only help the client side (encoding, decoding) on more cores.
    pub fn connections(mut self, n: usize) -> Self {
        self.pool.connections = n;
        self
    }

    /// Commands in flight on one connection before further operations wait for
    /// a turn in the store's send queue (default [`DEFAULT_IN_FLIGHT`], 128).
    /// Time in that queue is bounded by the caller's `wait`, not by the operation
    /// timeout, and never counts as an outage (see [Bursts](super#bursts)).
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.pool.in_flight = n;
        self
    }

    /// Builds the store without contacting the server: the connection opens on the
    /// first command, so an application can start while Redis is down (its calls fail
    /// closed, or degrade, until it is back). A malformed URL or prefix is an error
    /// here. Must be called inside a Tokio runtime.
    pub fn build_lazy(self) -> Result<RedisStore, StoreError> {
        let url = self.url.clone();
        self.build_lazy_inner()
            .map_err(|e| crate::store::url::at_startup("Redis store", &url, e))
    }

    fn build_lazy_inner(self) -> Result<RedisStore, StoreError> {
        let layout = KeyLayout::new(&self.prefix)?;
        super::from::tls_provider();
        let client = redis::Client::open(self.url.as_str())
            // No source: the parse error may echo the URL, password included.
            .map_err(|e| StoreError::config(format!("malformed URL: {e}")))?;
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(StoreError::Config(
                "RedisStore must be built inside a Tokio runtime".into(),
            ));
        }
        self.pool.check()?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.response_timeout))
            .set_number_of_retries(self.reconnect_retries)
            .set_min_delay(Duration::from_millis(20))
            .set_max_delay(self.connect_timeout);
        let all = (0..self.pool.connections)
            .map(|_| ConnectionManager::new_lazy_with_config(client.clone(), config.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| StoreError::config(e.to_string()).with_source(e))?;
        Ok(RedisStore {
            conns: Conns::new(all, self.pool.in_flight),
            layout,
            native: NativeClaim::default(),
        })
    }

    /// Builds the store, connects, loads the scripts and reads the server's
    /// version (below Redis 7.0 claims without a fence use the script). Fails with
    /// `StoreError::Config` for a malformed URL and `StoreError::Unavailable` when the
    /// server cannot be reached.
    pub async fn connect(self) -> Result<RedisStore, StoreError> {
        let url = self.url.clone();
        self.connect_inner()
            .await
            .map_err(|e| crate::store::url::at_startup("Redis store", &url, e))
    }

    async fn connect_inner(self) -> Result<RedisStore, StoreError> {
        // Not derived from the response timeout: that one is long on purpose, and
        // a server that cannot be reached should fail the application's start fast.
        let budget = self.connect_timeout.saturating_mul(CONNECT_BUDGET_FACTOR);
        let store = self.build_lazy_inner()?;
        // Every connection opens, side by side (a lazy one would make the
        // first burst wait for it); the scripts load once per server.
        let open = async {
            let mut pings = tokio::task::JoinSet::new();
            for _ in 1..store.conns.len() {
                let mut con = store.conns.get();
                pings.spawn(async move {
                    redis::cmd("PING")
                        .query_async::<()>(&mut con)
                        .await
                        .map_err(scripts::map_err)
                });
            }
            scripts::preload(&mut store.conns.get()).await?;
            native::detect(&mut store.conns.get(), &store.native).await;
            while let Some(r) = pings.join_next().await {
                r.map_err(|e| StoreError::unavailable(format!("opening a connection: {e}")))??;
            }
            Ok::<_, StoreError>(())
        };
        tokio::time::timeout(budget, open)
            .await
            .map_err(|_| StoreError::unavailable(format!("no answer within {budget:?}")))??;
        Ok(store)
    }
}
