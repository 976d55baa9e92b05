//! [`RedisStoreBuilder`]: the settings of a single-node [`RedisStore`], its
//! connection pool included.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::codec::KeyLayout;
use super::conn::Conns;
use super::durability::Replication;
use super::native::{self, NativeClaim};
use super::sentinel::{self, Link, Resolver, Route, SentinelSpec};
use super::shared::Shared;
use super::{CONNECT_BUDGET_FACTOR, RedisStore, scripts};
use crate::store::StoreError;

/// Configures a [`RedisStore`].
#[derive(Debug, Clone)]
#[must_use]
pub struct RedisStoreBuilder {
    pub(super) url: String,
    pub(super) shared: Shared,
    pub(super) reconnect_retries: usize,
    pub(super) sentinel: Option<SentinelSpec>,
}

impl RedisStoreBuilder {
    super::shared::shared_setters!();

    /// Connection attempts per reconnection before the pending commands fail
    /// (default 2; later commands start a new reconnection).
    pub fn reconnect_retries(mut self, n: usize) -> Self {
        self.reconnect_retries = n;
        self
    }

    /// Builds the store without contacting the server: the connection opens on the
    /// first command, so an application can start while Redis is down (its calls fail
    /// closed, or degrade, until it is back). A malformed URL or prefix is an error
    /// here. Must be called inside a Tokio runtime. A store behind Sentinel
    /// must [`connect`](Self::connect): it asks the sentinels for the primary first.
    pub fn build_lazy(self) -> Result<RedisStore, StoreError> {
        let url = self.url.clone();
        self.build_lazy_inner()
            .map_err(|e| crate::store::url::at_startup("Redis store", &url, e))
    }

    fn build_lazy_inner(self) -> Result<RedisStore, StoreError> {
        if self.sentinel()?.is_some() {
            return Err(StoreError::config(
                "a store behind Sentinel cannot be built lazily: use connect()",
            ));
        }
        let layout = KeyLayout::new(&self.shared.prefix)?;
        super::from::tls_provider();
        let client = redis::Client::open(self.url.as_str())
            // No source: the parse error may echo the URL, password included.
            .map_err(|e| StoreError::config(format!("malformed URL: {e}")))?;
        self.checks()?;
        let config = self.manager_config();
        let all = (0..self.shared.pool.connections)
            .map(|_| {
                ConnectionManager::new_lazy_with_config(client.clone(), config.clone())
                    .map(Route::Direct)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| StoreError::config(e.to_string()).with_source(e))?;
        Ok(self.store(all, layout))
    }

    /// The Sentinel settings, from [`RedisStore::sentinel`] or a
    /// `redis+sentinel://` URL.
    fn sentinel(&self) -> Result<Option<SentinelSpec>, StoreError> {
        match &self.sentinel {
            Some(spec) => spec.check().map(|()| Some(spec.clone())),
            None if self.url.starts_with(sentinel::SCHEME) => {
                SentinelSpec::parse(&self.url).map(Some)
            }
            None => Ok(None),
        }
    }

    fn checks(&self) -> Result<(), StoreError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(StoreError::Config(
                "RedisStore must be built inside a Tokio runtime".into(),
            ));
        }
        self.shared.pool.check()?;
        self.shared.durability.check()
    }

    fn manager_config(&self) -> ConnectionManagerConfig {
        ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.shared.connect_timeout))
            .set_response_timeout(Some(self.shared.response_timeout))
            .set_number_of_retries(self.reconnect_retries)
            .set_min_delay(Duration::from_millis(20))
            .set_max_delay(self.shared.connect_timeout)
    }

    fn store(&self, all: Vec<Route>, layout: KeyLayout) -> RedisStore {
        RedisStore {
            conns: Conns::new(all, self.shared.pool.in_flight),
            layout,
            native: NativeClaim::default(),
            replication: std::sync::Arc::new(Replication::new(self.shared.durability)),
        }
    }

    /// A store behind Sentinel: each connection asks the sentinels for the
    /// primary (one after another: the first answer warms the sentinel
    /// connections the others reuse).
    async fn connect_sentinel(&self, spec: SentinelSpec) -> Result<RedisStore, StoreError> {
        let layout = KeyLayout::new(&self.shared.prefix)?;
        super::from::tls_provider();
        self.checks()?;
        let resolver = std::sync::Arc::new(Resolver::new(
            spec,
            self.manager_config(),
            self.shared.connect_timeout,
        )?);
        let mut all = Vec::with_capacity(self.shared.pool.connections);
        for _ in 0..self.shared.pool.connections {
            all.push(Route::Sentinel(
                Link::open(std::sync::Arc::clone(&resolver)).await?,
            ));
        }
        Ok(self.store(all, layout))
    }

    /// Builds the store, connects, loads the scripts and reads the server's
    /// version (below Redis 7.0 claims without a fence use the script). Fails with
    /// `StoreError::Config` for a malformed URL and `StoreError::Unavailable` when the
    /// server cannot be reached.
    ///
    /// Behind Sentinel (a `redis+sentinel://` URL or [`RedisStore::sentinel`]),
    /// the sentinels are asked for the primary first: a missing master name is
    /// `StoreError::Config`, a name no sentinel knows too, and sentinels that do
    /// not answer are `StoreError::Unavailable`; each names what to check.
    pub async fn connect(self) -> Result<RedisStore, StoreError> {
        let url = self.url.clone();
        self.connect_inner()
            .await
            .map_err(|e| crate::store::url::at_startup("Redis store", &url, e))
    }

    async fn connect_inner(self) -> Result<RedisStore, StoreError> {
        // Not derived from the response timeout: that one is long on purpose, and
        // a server that cannot be reached should fail the application's start fast.
        let budget = self
            .shared
            .connect_timeout
            .saturating_mul(CONNECT_BUDGET_FACTOR);
        let store = match self.sentinel()? {
            Some(spec) => self.connect_sentinel(spec).await?,
            None => self.build_lazy_inner()?,
        };
        // Every connection opens, side by side (a lazy one would make the
        // first burst wait for it); the scripts load once per server.
        let open = async {
            let mut pings = tokio::task::JoinSet::new();
            for _ in 1..store.conns.len() {
                let mut con = store.con();
                pings.spawn(async move {
                    redis::cmd("PING")
                        .query_async::<()>(&mut con)
                        .await
                        .map_err(scripts::map_err)
                });
            }
            scripts::preload(&mut store.con()).await?;
            native::detect(&mut store.con(), &store.native).await;
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
