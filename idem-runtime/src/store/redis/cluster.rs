//! The Redis Cluster record store: the same scripts as [`RedisStore`](super::RedisStore),
//! routed by the record key's hash tag (`{<idem key>}`), so each script touches one
//! slot on one master. The cluster client follows `MOVED`/`ASK` and refreshes its
//! slot map after a failover. A response timeout is always set (redis-rs sets none
//! for clusters by default, which would let a hung node hang direct calls); like
//! the single-node store's it defaults to 10 s and leaves the deadline to the
//! guard's operation budget (see [Timeouts](super#timeouts)).

use std::time::Duration;

use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo, SingleNodeRoutingInfo};

use super::codec::KeyLayout;
use super::conn::Conns;
use super::durability::{Acks, Replication};
use super::native::NativeClaim;
use super::shared::Shared;
use super::{census, native, scripts, server};
use crate::store::{
    BoxFuture, Claim, ClaimRequest, Owned, Owner, RecordState, Store, StoreError, Warning,
};

/// A record store on a Redis Cluster. See the [module docs](super) for fences and
/// what a failover can lose.
#[derive(Clone)]
pub struct RedisClusterStore {
    conns: Conns<ClusterConnection>,
    layout: KeyLayout,
    native: NativeClaim,
    replication: std::sync::Arc<Replication>,
}

impl std::fmt::Debug for RedisClusterStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisClusterStore")
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

/// Configures a [`RedisClusterStore`].
#[derive(Debug, Clone)]
#[must_use]
pub struct RedisClusterStoreBuilder {
    nodes: Vec<String>,
    shared: Shared,
    retries: u32,
}

impl RedisClusterStoreBuilder {
    super::shared::shared_setters!();

    /// Retries of a request on `MOVED`, `TRYAGAIN`, `CLUSTERDOWN` and connection
    /// errors, within the response timeout (default 3).
    pub fn retries(mut self, n: u32) -> Self {
        self.retries = n;
        self
    }

    /// Connects to the cluster (any reachable seed node) and loads the scripts on
    /// every node. `StoreError::Config` for malformed URLs, `Unavailable` when no
    /// node answers.
    pub async fn connect(self) -> Result<RedisClusterStore, StoreError> {
        let layout = KeyLayout::new(&self.shared.prefix)?;
        self.shared.pool.check()?;
        self.shared.durability.check()?;
        if self.nodes.is_empty() {
            return Err(StoreError::Config("no redis cluster nodes given".into()));
        }
        let client = ClusterClient::builder(self.nodes.iter().map(String::as_str))
            .connection_timeout(self.shared.connect_timeout)
            .response_timeout(self.shared.response_timeout)
            .retries(self.retries)
            .min_retry_wait(10)
            .max_retry_wait(200)
            .build()
            .map_err(|e| StoreError::config(format!("redis cluster nodes: {e}")).with_source(e))?;
        // Opening connections to the seed and the nodes, then loading the scripts
        // on every node; not derived from the (deliberately long) response timeout.
        let budget = self
            .shared
            .connect_timeout
            .saturating_mul(super::CONNECT_BUDGET_FACTOR + 1);
        let connect = async {
            let mut all = Vec::with_capacity(self.shared.pool.connections);
            for _ in 0..self.shared.pool.connections {
                let mut con = client
                    .get_async_connection()
                    .await
                    .map_err(scripts::map_err)?;
                if all.is_empty() {
                    scripts::preload(&mut con).await?;
                }
                all.push(con);
            }
            Ok::<_, StoreError>(all)
        };
        let all = tokio::time::timeout(budget, connect).await.map_err(|_| {
            StoreError::unavailable(format!("redis cluster: no answer within {budget:?}"))
        })??;
        let native = NativeClaim::default();
        let mut first = all[0].clone();
        let info = first.route_command(info_server(), all_masters());
        if let Ok(Ok(reply)) = tokio::time::timeout(self.shared.connect_timeout, info).await {
            native.follow(&reply);
        }
        Ok(RedisClusterStore {
            conns: Conns::new(all, self.shared.pool.in_flight),
            layout,
            native,
            replication: std::sync::Arc::new(Replication::new(self.shared.durability)),
        })
    }
}

impl RedisClusterStore {
    /// A builder for the seed nodes (`redis://host:port` each).
    pub fn builder<S: Into<String>>(
        nodes: impl IntoIterator<Item = S>,
    ) -> RedisClusterStoreBuilder {
        RedisClusterStoreBuilder {
            nodes: nodes.into_iter().map(Into::into).collect(),
            shared: Shared::default(),
            retries: 3,
        }
    }

    /// Connects with the defaults.
    pub async fn connect<S: Into<String>>(
        nodes: impl IntoIterator<Item = S>,
    ) -> Result<RedisClusterStore, StoreError> {
        Self::builder(nodes).connect().await
    }

    /// The Redis key holding `key`'s record.
    pub fn record_key(&self, key: &str) -> Vec<u8> {
        self.layout.record_key(key)
    }

    /// One of the store's cluster connections (the next in turn), for commands
    /// of your own. They do not take turns in the store's send queue.
    pub fn connection(&self) -> ClusterConnection {
        self.conns.get()
    }

    /// The connection for one store operation.
    fn con(&self) -> ClusterConnection {
        self.conns.get()
    }
}

/// `WAIT` goes to the master of the record's slot: the node, and the
/// connection to it, that took the write.
impl Acks for ClusterConnection {
    fn wait_for<'a>(
        &'a mut self,
        record: &'a [u8],
        cmd: redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        use redis::cluster_routing::{Route, Slot, SlotAddr};
        let route = Route::with_slot(Slot::for_key(record), SlotAddr::Master);
        let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
        Box::pin(async move { self.route_command(cmd, routing).await })
    }
}

super::token_scripts::token_store!(RedisClusterStore);
super::state_scripts::state_store!(RedisClusterStore);

impl Store for RedisClusterStore {
    fn name(&self) -> &'static str {
        "redis-cluster"
    }

    super::record_ops!();

    fn tokens(&self) -> Option<&dyn crate::store::token::TokenStore> {
        Some(self)
    }

    fn states(&self) -> Option<&dyn crate::store::state::StateStore> {
        Some(self)
    }

    fn send_queue(&self) -> Option<&crate::store::SendQueue> {
        Some(self.conns.queue())
    }

    /// `SCAN`s every master (from `CLUSTER NODES`).
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

    super::operator::operator_ops!();

    /// Reads the version and `maxmemory-policy` of every master.
    fn verify(&self) -> BoxFuture<'_, Result<Vec<Warning>, StoreError>> {
        let mut con = self.con();
        Box::pin(async move {
            let info = con
                .route_command(info_server(), all_masters())
                .await
                .map_err(scripts::map_err)?;
            let mut texts = Vec::new();
            server::strings(&info, &mut texts);
            let mut warnings = Vec::new();
            for text in texts.iter().filter(|t| t.contains("redis_version:")) {
                warnings.extend(server::check_version(text)?);
            }
            warnings.dedup_by(|a, b| a.0 == b.0);
            let mut cmd = redis::cmd("CONFIG");
            cmd.arg("GET").arg("maxmemory-policy");
            warnings.extend(match con.route_command(cmd, all_masters()).await {
                Ok(v) => {
                    let mut s = Vec::new();
                    server::strings(&v, &mut s);
                    server::policy_warnings(&s)
                }
                Err(e) if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() => {
                    return Err(scripts::map_err(e));
                }
                Err(e) => vec![super::cannot_read_policy(&e)],
            });
            Ok(warnings)
        })
    }
}

/// The masters' addresses in a `CLUSTER NODES` reply (`<id> <ip:port@cport> <flags> …`),
/// failed ones left out.
fn masters(nodes: &str) -> Vec<(String, u16)> {
    nodes
        .lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (addr, flags) = (f.nth(1)?, f.next()?);
            if !flags.split(',').any(|x| x == "master") || flags.contains("fail") {
                return None;
            }
            let addr = addr.split(['@', ',']).next()?;
            let (host, port) = addr.rsplit_once(':')?;
            Some((host.to_owned(), port.parse().ok()?))
        })
        .collect()
}

fn info_server() -> redis::Cmd {
    let mut cmd = redis::cmd("INFO");
    cmd.arg("server");
    cmd
}

fn all_masters() -> RoutingInfo {
    RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None))
}

impl RedisClusterStore {
    /// The record keys matching `pattern` on every master (from `CLUSTER
    /// NODES`), with their states (see `census.rs`).
    pub(super) async fn scan_all(
        &self,
        pattern: &str,
    ) -> Result<Vec<(String, crate::store::Counted)>, StoreError> {
        let mut con = self.conns.get();
        let mut cmd = redis::cmd("CLUSTER");
        cmd.arg("NODES");
        let random = RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random);
        let reply = con
            .route_command(cmd, random)
            .await
            .map_err(scripts::map_err)?;
        let nodes: String = redis::FromRedisValue::from_redis_value(reply.clone())
            .map_err(|_| census::unexpected("CLUSTER NODES", &reply))?;
        let mut found = Vec::new();
        for (host, port) in masters(&nodes) {
            let mut cursor = 0;
            loop {
                let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
                    host: host.clone(),
                    port,
                });
                let reply = con
                    .route_command(census::scan_cmd(cursor, pattern), route)
                    .await
                    .map_err(scripts::map_err)?;
                let (next, keys) = census::scan_reply(reply)?;
                census::classify(&mut con, &self.layout, keys, false, &mut found).await?;
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(found)
    }
}
