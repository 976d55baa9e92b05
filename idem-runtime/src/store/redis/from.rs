//! A [`RedisStore`] over a connection the application already configured: a
//! `redis::Client` built with its own TLS certificates, credentials or RESP
//! version, or a `ConnectionManager` it shares. And the TLS set-up `rediss://`
//! URLs need (feature `redis-tls`).

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::codec::KeyLayout;
use super::conn::{Conns, DEFAULT_IN_FLIGHT};
use super::native::{self, NativeClaim};
use super::sentinel::Route;
use super::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT, RedisStore, scripts};
use crate::store::StoreError;

impl RedisStore {
    /// A store over a `redis::Client` you built (of `idem::redis`, the version
    /// idem links), for instance with `redis::Client::build_with_tls` and your
    /// own CA. Opens a `ConnectionManager` with idem's defaults (1 s connect,
    /// 10 s response) and loads the scripts; `prefix` as in
    /// [`RedisStoreBuilder::prefix`](super::RedisStoreBuilder::prefix).
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), idem::Error> {
    /// use idem::store::redis::RedisStore;
    /// let client = redis::Client::open("redis://127.0.0.1:6379").map_err(|e| {
    ///     idem::store::StoreError::config("redis url").with_source(e)
    /// })?;
    /// let store = RedisStore::from_client(client, "idem:").await?;
    /// # drop(store); Ok(()) }
    /// ```
    pub async fn from_client(
        client: redis::Client,
        prefix: &str,
    ) -> Result<RedisStore, StoreError> {
        tls_provider();
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(DEFAULT_CONNECT_TIMEOUT))
            .set_response_timeout(Some(DEFAULT_RESPONSE_TIMEOUT))
            .set_number_of_retries(2);
        let con = tokio::time::timeout(
            DEFAULT_CONNECT_TIMEOUT * 4,
            client.get_connection_manager_with_config(config),
        )
        .await
        .map_err(|_| StoreError::unavailable("redis: no connection within the connect budget"))?
        .map_err(|e| StoreError::unavailable(format!("redis: {e}")).with_source(e))?;
        Self::from_connection_manager(con, prefix).await
    }

    /// A store over a `ConnectionManager` you already hold (and may keep using
    /// for your own commands): its timeouts and reconnection are yours. Loads
    /// the scripts.
    pub async fn from_connection_manager(
        con: ConnectionManager,
        prefix: &str,
    ) -> Result<RedisStore, StoreError> {
        let layout = KeyLayout::new(prefix)?;
        let mut probe = con.clone();
        tokio::time::timeout(DEFAULT_CONNECT_TIMEOUT * 4, scripts::preload(&mut probe))
            .await
            .map_err(|_| {
                StoreError::unavailable("redis: scripts not loaded within the connect budget")
            })??;
        let native = NativeClaim::default();
        native::detect(&mut probe, &native).await;
        Ok(RedisStore {
            conns: Conns::new(vec![Route::Direct(con)], DEFAULT_IN_FLIGHT),
            layout,
            native,
            replication: std::sync::Arc::default(),
        })
    }
}

/// With `redis-tls`, makes ring the process's rustls crypto provider unless the
/// application installed one: redis-rs builds its TLS config with the process
/// default, and rustls cannot pick one by itself when a dependency graph enables
/// both of its providers. Without the feature there is nothing to do.
pub(super) fn tls_provider() {
    #[cfg(feature = "redis-tls")]
    {
        // An error means a provider is installed already: keep the application's.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
